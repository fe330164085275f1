package snapshot_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestEntriesAndGroups: the snapshots listing describes each snapshot from
// its manifest (an unreadable one recorded, not fatal), goes below the
// namespace with maxDepth, and the groups listing counts a group's
// snapshots; a namespace that does not exist is ErrNoNamespace.
func TestEntriesAndGroups(t *testing.T) {
	dir, _ := datastore(t)
	// One manifest unreadable: recorded in its entry.
	bad := fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "101", fixture.T0), snapshot.ManifestName)
	if err := os.WriteFile(bad, []byte("not a blob"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := fixture.OpenStore(t, dir)
	removed := func(s index.Snapshot) { t.Errorf("%s reported removed", s) }
	entries, err := snapshot.Entries(ctx, store, ns(t, ""), 0, removed)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Snapshot)
		switch {
		case e.BackupID == "101" && e.Error == "":
			t.Errorf("%s: unreadable manifest not recorded: %+v", e.Snapshot, e)
		case e.BackupID != "101" && (e.Error != "" || len(e.Files) != 2 || e.Size == 0):
			t.Errorf("%s: %+v", e.Snapshot, e)
		}
	}
	if got := strings.Join(names, " "); got != "ct/200/2026-11-29T10:00:00Z host/h1/2026-11-29T10:00:00Z vm/100/2026-11-29T10:00:00Z vm/100/2026-11-29T11:00:00Z vm/101/2026-11-29T10:00:00Z" {
		t.Errorf("entries %s", got)
	}
	deep, err := snapshot.Entries(ctx, store, ns(t, "prod"), -1, removed)
	if err != nil || len(deep) != 2 || deep[1].Namespace != "prod/db" {
		t.Errorf("prod, all depths: %+v (%v)", deep, err)
	}
	groups, err := snapshot.Groups(ctx, store, ns(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if want := map[string]int{"vm/100": 2}[g.Group]; (want == 0 && g.Count != 1) || (want != 0 && g.Count != want) {
			t.Errorf("group %s: %d snapshots", g.Group, g.Count)
		}
	}
	if len(groups) != 4 {
		t.Errorf("%d groups, want 4: %+v", len(groups), groups)
	}
	for _, err := range []error{
		func() error { _, err := snapshot.Entries(ctx, store, ns(t, "nonexistent"), 0, removed); return err }(),
		func() error { _, err := snapshot.Groups(ctx, store, ns(t, "nonexistent")); return err }(),
	} {
		if !errors.Is(err, snapshot.ErrNoNamespace) {
			t.Errorf("nonexistent namespace: %v", err)
		}
	}
}
