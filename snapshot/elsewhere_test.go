package snapshot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestNoGroupNamespaceHint: a group without a finished snapshot in the
// namespace asked for names, bounded to 3, the namespaces it exists in
// (as --ns takes them); Resolve and GroupEntries say it, a group found
// nowhere gets no hint, and the error stays ErrNoSnapshot.
func TestNoGroupNamespaceHint(t *testing.T) {
	dir := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 3))
	for _, ns := range []string{"a", "b", "b/c", "d", "e"} {
		fixture.Backup(t, dir, fixture.Snap(t, ns, "ct", "9", fixture.T0), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	fixture.Backup(t, dir, fixture.Snap(t, "", "vm", "7", fixture.T0), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	store := fixture.OpenStore(t, dir)

	_, err := snapshot.Resolve(ctx, store, nil, "ct/9")
	if !errors.Is(err, snapshot.ErrNoSnapshot) || !strings.Contains(err.Error(), "(it exists in namespace a: --ns a; in namespace b: --ns b; in namespace b/c: --ns b/c)") {
		t.Errorf("Resolve ct/9 in the root: %v", err)
	}
	_, err = snapshot.GroupEntries(ctx, store, index.Namespace{"a"}, "vm", "7", nil)
	if !errors.Is(err, snapshot.ErrNoSnapshot) || !strings.Contains(err.Error(), "(it exists in the root namespace: no --ns)") {
		t.Errorf("GroupEntries vm/7 in a: %v", err)
	}
	_, err = snapshot.Resolve(ctx, store, index.Namespace{"a"}, "vm/8")
	if !errors.Is(err, snapshot.ErrNoSnapshot) || strings.Contains(err.Error(), "exists in") {
		t.Errorf("Resolve vm/8, found nowhere: %v", err)
	}
	_, err = snapshot.Resolve(ctx, store, nil, "ct/9/2026-11-29T10:00:00Z")
	if !errors.Is(err, snapshot.ErrNoSnapshot) || !strings.Contains(err.Error(), "(it exists in namespace a: --ns a;") {
		t.Errorf("Resolve of a ct/9 snapshot in the root: %v", err)
	}
}
