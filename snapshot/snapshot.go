package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// ManifestName is the manifest blob's file name (§1.4).
const ManifestName = "index.json.blob"

// Info is one finished snapshot: its name and the files in its directory
// (names and sizes in bytes).
type Info struct {
	Snapshot index.Snapshot
	Files    []chunkstore.FileInfo // Path is the bare file name
}

// ErrNoSnapshot is returned when a snapshot or group has no finished snapshot
// (it matches chunkstore.ErrNotFound: missing data).
var ErrNoSnapshot = chunkstore.MissingKind("no such snapshot")

// ErrRemoved is returned (wrapping ErrNoSnapshot) for a snapshot that was
// there when it was listed or resolved and is gone now: on a live datastore
// a prune removed it while this command ran. It is no damage.
var ErrRemoved = fmt.Errorf("%w: removed while running (pruned while this command ran)", ErrNoSnapshot)

// Gone reports whether the snapshot's manifest no longer exists: false when
// it exists or when that cannot be told (another error).
func Gone(ctx context.Context, store chunkstore.Store, snap index.Snapshot) bool {
	r, _, err := store.OpenFile(ctx, path.Join(snap.Dir(), ManifestName))
	if err != nil {
		return errors.Is(err, chunkstore.ErrNotFound)
	}
	r.Close()
	return false
}

// Removed turns err, a failure to read a file of snap, into an error
// wrapping ErrRemoved when the file is missing because the whole snapshot
// is gone (its manifest too); otherwise it returns err unchanged. A file
// missing from a snapshot that still exists stays what it is: damage.
func Removed(ctx context.Context, store chunkstore.Store, snap index.Snapshot, err error) error {
	if err == nil || !(errors.Is(err, chunkstore.ErrNotFound) || errors.Is(err, ErrNoSnapshot)) || errors.Is(err, ErrRemoved) {
		return err
	}
	if !Gone(ctx, store, snap) {
		return err
	}
	return fmt.Errorf("snapshot %s in %s: %w", snap, store, ErrRemoved)
}

// List returns the finished snapshots of namespace ns (not of its children),
// oldest first within each group, groups sorted by type and ID. Snapshot
// directories without index.json.blob (running or aborted backups) are left out.
// Entries whose names are no snapshot name (junk in the datastore, keys a
// service encoded without saying so) are left out too, with a warning
// through the store's warning channel (chunkstore.Warn) that counts them;
// names PBS keeps there (owner, notes, hidden files) are left out silently.
func List(ctx context.Context, store chunkstore.Store, ns index.Namespace) ([]Info, error) {
	return list(ctx, store, ns, "", "")
}

// ListGroup is List for the one group typ/id of namespace ns: it lists
// that group's directory only, so that what it says (a store of a chain
// that lacks snapshots) is about that group alone.
func ListGroup(ctx context.Context, store chunkstore.Store, ns index.Namespace, typ, id string) ([]Info, error) {
	return list(ctx, store, ns, typ, id)
}

// list is List, of group typ/id alone when typ is not "".
func list(ctx context.Context, store chunkstore.Store, ns index.Namespace, onlyType, onlyID string) ([]Info, error) {
	byDir := map[string]*Info{}
	finished := map[string]bool{}
	types := []string{"vm", "ct", "host"}
	if onlyType != "" {
		types = []string{onlyType}
	}
	for _, typ := range types {
		dir := path.Join(ns.Path(), typ)
		listed := dir
		if onlyType != "" {
			listed = path.Join(dir, onlyID)
		}
		files, err := store.ListFiles(ctx, listed)
		if err != nil {
			return nil, err
		}
		var skipped unlisted
		for _, f := range files {
			d, name := path.Split(f.Path)
			d = strings.TrimSuffix(d, "/")
			snap, ok := index.ParseSnapshotDir(d)
			if !ok || !sameNS(snap.NS, ns) {
				if e, ok := snapshotEntry(dir, f.Path); ok {
					skipped.add(e)
				}
				continue
			}
			info := byDir[d]
			if info == nil {
				info = &Info{Snapshot: snap}
				byDir[d] = info
			}
			info.Files = append(info.Files, chunkstore.FileInfo{Path: name, Size: f.Size})
			if name == ManifestName {
				finished[d] = true
			}
		}
		skipped.warn(store, dir, "snapshot (<type>/<id>/<time> as PBS names them)")
	}
	var out []Info
	for d, info := range byDir {
		if !finished[d] {
			continue
		}
		sort.Slice(info.Files, func(i, j int) bool { return info.Files[i].Path < info.Files[j].Path })
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Snapshot, out[j].Snapshot
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Time < b.Time
	})
	return out, nil
}

// NamespaceName names ns for messages: "the root namespace" or
// "namespace prod/db".
func NamespaceName(ns index.Namespace) string {
	if ns.IsRoot() {
		return "the root namespace"
	}
	return "namespace " + ns.String()
}

func sameNS(a, b index.Namespace) bool {
	return strings.Join(a, "/") == strings.Join(b, "/")
}

// Resolve turns "vm/100/2026-11-29T10:00:00Z" or "vm/100" (the group's latest
// finished snapshot) in namespace ns into a snapshot. The latest is chosen
// from a complete listing only (List fails rather than return part of one)
// and is the newest snapshot whose manifest still exists: one pruned since
// the listing is passed over for the next older one. A reference with its own
// namespace prefix ("ns/prod/vm/100") is resolved there; with a non-root ns
// that differs from it, it is refused (ErrBadName). It returns an error
// wrapping ErrNoSnapshot when nothing matches and a naming error for bad input.
func Resolve(ctx context.Context, store chunkstore.Store, ns index.Namespace, ref string) (index.Snapshot, error) {
	snap, err := index.ParseSnapshotRef(ref)
	if err != nil {
		return snap, err
	}
	// A reference may carry its own namespace ("ns/prod/vm/100/…", as List
	// and 'snapshots' print it); it must agree with ns unless ns is the root.
	switch {
	case len(snap.NS) == 0:
		snap.NS = ns
	case len(ns) != 0 && !sameNS(snap.NS, ns):
		return snap, fmt.Errorf("%w: %q is in namespace %q, not in the namespace given (%q)", index.ErrBadName, ref, snap.NS.String(), ns.String())
	}
	ns = snap.NS
	if snap.Time != 0 {
		r, _, err := store.OpenFile(ctx, path.Join(snap.Dir(), ManifestName))
		if err != nil {
			if errors.Is(err, chunkstore.ErrNotFound) {
				return snap, fmt.Errorf("%w: %s in %s of %s (no %s: missing or unfinished); %s", ErrNoSnapshot, snap.Dir(), NamespaceName(ns), store, ManifestName, nearest(ctx, store, snap))
			}
			return snap, err
		}
		r.Close()
		return snap, nil
	}
	all, err := ListGroup(ctx, store, ns, snap.Type, snap.ID)
	if err != nil {
		return snap, err
	}
	// List sorts oldest first within a group.
	for i := len(all) - 1; i >= 0; i-- {
		s := all[i].Snapshot
		if s.Type != snap.Type || s.ID != snap.ID {
			continue
		}
		if Gone(ctx, store, s) {
			continue // pruned since the listing
		}
		return s, nil
	}
	return snap, NoGroupError(ctx, store, ns, snap.Type, snap.ID)
}

// nearestShown is how many of a group's snapshots a "no such snapshot"
// message names.
const nearestShown = 3

// nearest describes the finished snapshots of snap's group for a message
// about a snapshot time that does not exist: the nearestShown closest in
// time, or that the group has none.
func nearest(ctx context.Context, store chunkstore.Store, snap index.Snapshot) string {
	all, err := ListGroup(ctx, store, snap.NS, snap.Type, snap.ID)
	if err != nil {
		return fmt.Sprintf("the group's snapshots could not be listed: %v", err)
	}
	var times []int64
	for _, i := range all {
		if i.Snapshot.Type == snap.Type && i.Snapshot.ID == snap.ID {
			times = append(times, i.Snapshot.Time)
		}
	}
	if len(times) == 0 {
		return fmt.Sprintf("group %s/%s has no finished snapshot there%s", snap.Type, snap.ID, elsewhere(ctx, store, snap.NS, snap.Type, snap.ID))
	}
	dist := func(t int64) int64 {
		if t > snap.Time {
			return t - snap.Time
		}
		return snap.Time - t
	}
	sort.SliceStable(times, func(i, j int) bool { return dist(times[i]) < dist(times[j]) })
	shown := times[:min(len(times), nearestShown)]
	sort.Slice(shown, func(i, j int) bool { return shown[i] < shown[j] })
	names := make([]string, len(shown))
	for i, t := range shown {
		names[i] = index.FormatTime(t)
	}
	return fmt.Sprintf("group %s/%s has %d snapshot(s), nearest: %s", snap.Type, snap.ID, len(times), strings.Join(names, ", "))
}

// LoadManifest reads the snapshot's manifest (see ReadManifest) and runs
// its key checks with cc (nil = no key): fingerprint and signature (§6.3).
func LoadManifest(ctx context.Context, store chunkstore.Store, snap index.Snapshot, cc *crypto.Config) (*index.Manifest, error) {
	m, err := ReadManifest(ctx, store, snap)
	if err != nil {
		return nil, err
	}
	if err := m.Check(cc); err != nil {
		return nil, fmt.Errorf("%s: %w", path.Join(snap.Dir(), ManifestName), err)
	}
	return m, nil
}

// ReadManifest reads, decodes and parses the snapshot's index.json.blob and
// checks that it names the snapshot it is stored in, without key checks
// (for listings). It fails for an encrypted manifest blob, which PBS never
// writes, and wraps ErrNoSnapshot when the manifest is missing.
func ReadManifest(ctx context.Context, store chunkstore.Store, snap index.Snapshot) (*index.Manifest, error) {
	name := path.Join(snap.Dir(), ManifestName)
	raw, err := chunkstore.ReadFile(ctx, store, name)
	if err != nil {
		if errors.Is(err, chunkstore.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s in %s", ErrNoSnapshot, snap.Dir(), store)
		}
		return nil, err
	}
	data, err := decodeBlob(raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m, err := index.ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if m.BackupType != snap.Type || m.BackupID != snap.ID || m.BackupTime != snap.Time {
		return nil, fmt.Errorf("%s: %w: manifest names %s/%s/%s, not the snapshot it is stored in",
			name, index.ErrBadManifest, m.BackupType, m.BackupID, index.FormatTime(m.BackupTime))
	}
	return m, nil
}

func decodeBlob(raw []byte, cc *crypto.Config) ([]byte, error) {
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	data, _, err := dec.Decode(nil, raw, cc, 0)
	return data, err
}

// ReadBlob reads the blob archive name (e.g. "qemu-server.conf.blob") of the
// snapshot, checks its size and SHA-256 against manifest m (§6.2) and
// decodes it with cc (needed for crypt mode encrypt). Errors name the file.
func ReadBlob(ctx context.Context, store chunkstore.FileOpener, snap index.Snapshot, m *index.Manifest, name string, cc *crypto.Config) ([]byte, error) {
	fi, err := m.File(name)
	if err != nil {
		return nil, err
	}
	raw, err := CheckBlob(ctx, store, snap, m, name)
	if err != nil {
		return nil, err
	}
	rel := path.Join(snap.Dir(), name)
	kind, err := chunkstore.Kind(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if kind.Encrypted() && fi.CryptMode != index.CryptEncrypt {
		return nil, fmt.Errorf("%s: encrypted blob but manifest crypt mode is %s", rel, fi.CryptMode)
	}
	data, err := decodeBlob(raw, cc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return data, nil
}

// CheckBlob reads the blob archive name of the snapshot and checks its size
// and SHA-256 against manifest m (§6.2) without decoding it (no key needed),
// returning the encoded blob. Errors name the file.
func CheckBlob(ctx context.Context, store chunkstore.FileOpener, snap index.Snapshot, m *index.Manifest, name string) ([]byte, error) {
	if _, err := m.File(name); err != nil {
		return nil, err
	}
	rel := path.Join(snap.Dir(), name)
	raw, err := chunkstore.ReadFile(ctx, store, rel)
	if err != nil {
		return nil, err
	}
	if err := m.VerifyFile(name, uint64(len(raw)), sha256Sum(raw)); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return raw, nil
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
