package index

import (
	"path"
	"strings"
	"testing"
)

// FuzzNames: snapshot references, namespaces and archive names never panic,
// and whatever is accepted yields datastore-relative paths that stay inside
// the datastore (no "..", no absolute path, no empty or "." components) and
// round-trip through their parsers.
func FuzzNames(f *testing.F) {
	for _, s := range []string{
		"vm/100/2026-11-29T10:00:00Z", "vm/100", "ns/prod/ns/db/ct/a.b-c/2020-06-26T13:56:05Z",
		"ns/../vm/100", "../vm/100", "vm/..", "host/elsa/0000-01-01T00:00:00Z", "ns//vm/1", "prod/db",
		"drive-scsi0", "a.img", "x.pxar", "../../etc/passwd", "..", ".",
	} {
		f.Add(s)
	}
	safe := func(t *testing.T, what, p string) {
		if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p {
			t.Fatalf("%s %q is not a clean relative path", what, p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == ".." || c == "." || c == "" || c == ".chunks" {
				t.Fatalf("%s %q has component %q", what, p, c)
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if snap, err := ParseSnapshotRef(s); err == nil {
			safe(t, "group dir", snap.GroupDir())
			if !snap.IsGroup() {
				safe(t, "snapshot dir", snap.Dir())
				back, ok := ParseSnapshotDir(snap.Dir())
				if !ok || back.Dir() != snap.Dir() {
					t.Fatalf("ParseSnapshotDir(%q) = %+v, %v", snap.Dir(), back, ok)
				}
			}
		}
		if ns, err := ParseNamespace(s); err == nil {
			if ns.String() != s {
				t.Fatalf("namespace %q prints as %q", s, ns.String())
			}
			if !ns.IsRoot() {
				safe(t, "namespace path", ns.Path())
			}
		}
		n := NormalizeArchiveName(s)
		if KindOf(n) == KindUnknown {
			t.Fatalf("NormalizeArchiveName(%q) = %q has no archive extension", s, n)
		}
		if NormalizeArchiveName(n) != n {
			t.Fatalf("NormalizeArchiveName not idempotent on %q", n)
		}
		if ValidArchiveName(s) == nil {
			safe(t, "archive name", s)
			if ValidArchiveName(n) != nil {
				t.Fatalf("valid name %q normalizes to invalid %q", s, n)
			}
		}
		if e, err := ParseTime(s); err == nil && FormatTime(e) != s {
			t.Fatalf("time %q formats back as %q", s, FormatTime(e))
		}
	})
}
