package index

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on namespaces (§1.3).
const (
	MaxNamespaceDepth  = 7   // levels
	MaxNamespaceLength = 256 // bytes, levels joined by '/'
)

// timeLayout is the snapshot time format (§1.3): UTC, exactly 20 characters.
const timeLayout = "2006-01-02T15:04:05Z"

// validName reports whether s matches [A-Za-z0-9_][A-Za-z0-9._-]* (§1.3),
// the rule for namespace levels and backup IDs.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// validType reports whether t is a backup type: vm, ct or host (§1.3).
func validType(t string) bool { return t == "vm" || t == "ct" || t == "host" }

// Namespace is a backup namespace as its levels, root = empty (§1.3).
type Namespace []string

// ParseNamespace parses levels joined by '/', e.g. "prod/db"; "" is the root
// namespace. Each level must match [A-Za-z0-9_][A-Za-z0-9._-]*, at most 7
// levels and 256 bytes in total; empty levels ("a//b", "/a", "a/") are
// refused. Errors wrap ErrBadName.
func ParseNamespace(s string) (Namespace, error) {
	if s == "" {
		return Namespace{}, nil
	}
	ns := Namespace(strings.Split(s, "/"))
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	return ns, nil
}

// Validate checks the level names, the depth (≤ 7) and the total length
// (≤ 256 bytes) of §1.3; errors wrap ErrBadName.
func (ns Namespace) Validate() error {
	if len(ns) > MaxNamespaceDepth {
		return fmt.Errorf("%w: namespace %q has %d levels, at most %d allowed", ErrBadName, ns.String(), len(ns), MaxNamespaceDepth)
	}
	if n := len(ns.String()); n > MaxNamespaceLength {
		return fmt.Errorf("%w: namespace %q is %d bytes, at most %d allowed", ErrBadName, ns.String(), n, MaxNamespaceLength)
	}
	for _, l := range ns {
		if !validName(l) {
			return fmt.Errorf("%w: namespace %q: level %q does not match [A-Za-z0-9_][A-Za-z0-9._-]*", ErrBadName, ns.String(), l)
		}
	}
	return nil
}

// String returns the levels joined by '/' ("" for the root namespace).
func (ns Namespace) String() string { return strings.Join(ns, "/") }

// IsRoot reports whether ns is the root namespace.
func (ns Namespace) IsRoot() bool { return len(ns) == 0 }

// Path returns the datastore-relative directory of ns: "ns/prod/ns/db" for
// prod/db, "" for the root (§1.3, §8.1).
func (ns Namespace) Path() string {
	if len(ns) == 0 {
		return ""
	}
	return "ns/" + strings.Join(ns, "/ns/")
}

// Snapshot identifies a backup snapshot, or a backup group when Time is 0
// (§1.3).
type Snapshot struct {
	NS   Namespace
	Type string // "vm", "ct" or "host"
	ID   string // e.g. "100"
	Time int64  // backup time, epoch seconds; 0 = group / latest snapshot
}

// IsGroup reports whether s names a group (Time == 0).
func (s Snapshot) IsGroup() bool { return s.Time == 0 }

// GroupDir returns the datastore-relative group directory with '/'
// separators, e.g. "ns/prod/vm/100" (§1.3).
func (s Snapshot) GroupDir() string {
	g := s.Type + "/" + s.ID
	if p := s.NS.Path(); p != "" {
		return p + "/" + g
	}
	return g
}

// Dir returns the datastore-relative snapshot directory with '/' separators,
// e.g. "ns/prod/ns/db/vm/100/2026-11-29T10:00:00Z" (§1.3). The Time field is
// always formatted, also when it is 0.
func (s Snapshot) Dir() string { return s.GroupDir() + "/" + FormatTime(s.Time) }

// String returns Dir(), or GroupDir() for a group (Time 0).
func (s Snapshot) String() string {
	if s.IsGroup() {
		return s.GroupDir()
	}
	return s.Dir()
}

// FormatTime formats epoch seconds as the snapshot time
// YYYY-MM-DDTHH:MM:SSZ in UTC (§1.3), e.g. 1593179765 →
// "2020-06-26T13:56:05Z". Only years 0000–9999 give a name ParseTime accepts.
func FormatTime(epoch int64) string { return time.Unix(epoch, 0).UTC().Format(timeLayout) }

// ParseTime parses exactly YYYY-MM-DDTHH:MM:SSZ (20 characters, UTC, no
// fraction or offset) into epoch seconds (§1.3). Errors wrap ErrBadName.
func ParseTime(s string) (int64, error) {
	bad := func() (int64, error) {
		return 0, fmt.Errorf("%w: snapshot time %q: want YYYY-MM-DDTHH:MM:SSZ (UTC)", ErrBadName, s)
	}
	if len(s) != len(timeLayout) {
		return bad()
	}
	for i := 0; i < len(s); i++ {
		if l := timeLayout[i]; l >= '0' && l <= '9' {
			if s[i] < '0' || s[i] > '9' {
				return bad()
			}
		} else if s[i] != l {
			return bad()
		}
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return bad()
	}
	return t.Unix(), nil
}

// ParseSnapshotRef parses a user's snapshot or group reference:
// "[ns/<a>/ns/<b>/]<type>/<id>[/<time>]", e.g. "vm/100/2026-11-29T10:00:00Z"
// or "vm/100" (Time 0: the latest snapshot, which the caller resolves).
// Errors wrap ErrBadName and say which part is wrong.
func ParseSnapshotRef(s string) (Snapshot, error) {
	snap, n, err := parsePath(s)
	if err != nil {
		return Snapshot{}, err
	}
	if n < 2 || n > 3 {
		return Snapshot{}, fmt.Errorf("%w: %q: want [ns/<ns>/…]<type>/<id>[/<time>]", ErrBadName, s)
	}
	return snap, nil
}

// ParseSnapshotDir parses a datastore-relative snapshot directory
// "[ns/<a>/…]<type>/<id>/<time>" (no leading or trailing '/', no file name),
// the inverse of Snapshot.Dir. ok is false for anything else.
func ParseSnapshotDir(rel string) (Snapshot, bool) {
	s, n, err := parsePath(rel)
	if err != nil || n != 3 {
		return Snapshot{}, false
	}
	return s, true
}

// ParseGroupDir parses a datastore-relative group directory
// "[ns/<a>/…]<type>/<id>", the inverse of Snapshot.GroupDir; Time is 0.
func ParseGroupDir(rel string) (Snapshot, bool) {
	s, n, err := parsePath(rel)
	if err != nil || n != 2 {
		return Snapshot{}, false
	}
	return s, true
}

// parsePath parses namespace pairs followed by up to three components
// (type, id, time) and returns how many of those there were.
func parsePath(p string) (Snapshot, int, error) {
	var s Snapshot
	parts := strings.Split(p, "/")
	var ns Namespace
	for len(parts) >= 2 && parts[0] == "ns" {
		ns = append(ns, parts[1])
		parts = parts[2:]
	}
	if err := ns.Validate(); err != nil {
		return s, 0, fmt.Errorf("%q: %w", p, err)
	}
	s.NS = ns
	if len(parts) < 2 || len(parts) > 3 {
		return s, len(parts), fmt.Errorf("%w: %q: want [ns/<ns>/…]<type>/<id>[/<time>]", ErrBadName, p)
	}
	if !validType(parts[0]) {
		return s, 0, fmt.Errorf("%w: %q: backup type %q is not vm, ct or host", ErrBadName, p, parts[0])
	}
	if !validName(parts[1]) {
		return s, 0, fmt.Errorf("%w: %q: backup id %q does not match [A-Za-z0-9_][A-Za-z0-9._-]*", ErrBadName, p, parts[1])
	}
	s.Type, s.ID = parts[0], parts[1]
	if len(parts) == 3 {
		t, err := ParseTime(parts[2])
		if err != nil {
			return s, 0, fmt.Errorf("%q: %w", p, err)
		}
		s.Time = t
	}
	return s, len(parts), nil
}

// ArchiveKind is the format of a snapshot file, from its extension (§1.4).
type ArchiveKind int

// Archive kinds.
const (
	KindUnknown ArchiveKind = iota // none of the extensions below
	KindFixed                      // *.fidx, §3
	KindDynamic                    // *.didx, §4
	KindBlob                       // *.blob, §2
)

// String returns "fidx", "didx", "blob" or "unknown".
func (k ArchiveKind) String() string {
	switch k {
	case KindFixed:
		return "fidx"
	case KindDynamic:
		return "didx"
	case KindBlob:
		return "blob"
	}
	return "unknown"
}

// KindOf returns the archive kind of a file name by its extension.
func KindOf(name string) ArchiveKind {
	switch {
	case strings.HasSuffix(name, ".fidx"):
		return KindFixed
	case strings.HasSuffix(name, ".didx"):
		return KindDynamic
	case strings.HasSuffix(name, ".blob"):
		return KindBlob
	}
	return KindUnknown
}

// NormalizeArchiveName maps a user-given archive name to the stored file
// name, like proxmox-backup-client: names ending in .fidx, .didx or .blob
// are unchanged; ".img" gets ".fidx"; ".pxar", ".mpxar", ".ppxar" and
// ".pcat1" get ".didx"; a name without any '.' is taken as a disk image and
// gets ".img.fidx" ("drive-scsi0" → "drive-scsi0.img.fidx"); any other name
// gets ".blob" ("qemu-server.conf" → "qemu-server.conf.blob"). It does not
// validate; see ValidArchiveName.
func NormalizeArchiveName(s string) string {
	if KindOf(s) != KindUnknown {
		return s
	}
	dot := strings.LastIndexByte(s, '.')
	if dot < 0 {
		return s + ".img.fidx"
	}
	switch s[dot:] {
	case ".img":
		return s + ".fidx"
	case ".pxar", ".mpxar", ".ppxar", ".pcat1":
		return s + ".didx"
	}
	return s + ".blob"
}

// visibleRune reports whether r may appear in an archive name printed to
// a terminal: not a control character (C0, C1), not an invisible format or
// default-ignorable character (bidi overrides, zero-width spaces, the
// combining grapheme joiner, Hangul fillers, variation selectors), not a
// line or paragraph separator, not a private-use character.
func visibleRune(r rune) bool {
	return !unicode.IsControl(r) && !unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// ValidArchiveName checks that name is safe as a file name inside a
// snapshot directory: non-empty, valid UTF-8 without '/', '\\' or
// characters that do not show as themselves on a terminal (visibleRune),
// and not "." or "..". (PBS itself never produces
// anything else; this keeps a hostile manifest from naming paths outside
// the snapshot, or from sending escape sequences to a terminal through
// listings and completion.) Errors wrap ErrBadName.
func ValidArchiveName(name string) error {
	if name == "" || name == "." || name == ".." || !utf8.ValidString(name) {
		return fmt.Errorf("%w: archive name %+.64q", ErrBadName, name)
	}
	for _, r := range name {
		if r == '/' || r == '\\' || !visibleRune(r) {
			return fmt.Errorf("%w: archive name %+.64q contains %+q", ErrBadName, name, r)
		}
	}
	return nil
}
