package backup_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestFailedBackupLeavesNoSnapshotDir: a backup that fails (a source that
// cannot be read) or is interrupted (its context cancelled) removes the
// snapshot directory it created, and the group directory when it created
// it; a group or snapshot directory that was there before is kept.
func TestFailedBackupLeavesNoSnapshotDir(t *testing.T) {
	tree := t.TempDir()
	fixture.WriteFile(t, tree, "a", make([]byte, 1<<20))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name     string
		ctx      context.Context
		src      backup.Source
		oldGroup bool // the group has a snapshot already
		oldSnap  bool // the snapshot directory is there (left by an earlier failure)
	}{
		{"pxar-missing-source", context.Background(), backup.Source{Name: "root.pxar", Path: filepath.Join(tree, "nope")}, false, false},
		{"pxar-interrupted", cancelled, backup.Source{Name: "root.pxar", Path: tree}, false, false},
		{"img-not-a-file", context.Background(), backup.Source{Name: "drive.img", Path: tree}, false, false},
		{"pxar-old-group", context.Background(), backup.Source{Name: "root.pxar", Path: filepath.Join(tree, "nope")}, true, false},
		{"pxar-old-snapshot-dir", cancelled, backup.Source{Name: "root.pxar", Path: tree}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			group := filepath.Join(dir, "host", "h1")
			snap := fixture.Snap(t, "", "host", "h1", fixture.T0+60)
			if c.oldGroup {
				if _, _, err := run(t, dir, backup.Options{Snapshot: fixture.Snap(t, "", "host", "h1", fixture.T0)}, backup.Source{Name: "root.pxar", Path: tree}); err != nil {
					t.Fatal(err)
				}
			}
			if c.oldSnap {
				if err := os.MkdirAll(filepath.Join(dir, snap.Dir()), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s, err := chunkstore.OpenLocal(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := backup.Run(c.ctx, s, []backup.Source{c.src}, backup.Options{Snapshot: snap}, nil); err == nil {
				t.Fatal("backup succeeded")
			}
			_, serr := os.Lstat(filepath.Join(dir, snap.Dir()))
			_, gerr := os.Lstat(group)
			switch {
			case c.oldSnap:
				if serr != nil {
					t.Errorf("snapshot directory there before was removed: %v", serr)
				}
			case serr == nil:
				t.Errorf("unfinished snapshot directory %s left", snap.Dir())
			case c.oldGroup && gerr != nil:
				t.Errorf("group directory with an older snapshot removed: %v", gerr)
			case !c.oldGroup && gerr == nil:
				ents, _ := os.ReadDir(group)
				t.Errorf("group directory created by the failed backup left (%d entries)", len(ents))
			}
		})
	}
}

// TestPxarBackupLeavesStoreOut: a datastore inside the directory backed up
// (Options.LeaveOut) is not in the archive, and is named in Result.Meta.
func TestPxarBackupLeavesStoreOut(t *testing.T) {
	src := t.TempDir()
	fixture.WriteFile(t, src, "keep", []byte("k"))
	dir := filepath.Join(src, "st")
	if err := os.MkdirAll(filepath.Join(dir, ".chunks", "ffff"), 0o750); err != nil {
		t.Fatal(err)
	}
	snap := fixture.Snap(t, "", "host", "h1", fixture.T0)
	res, _, err := run(t, dir, backup.Options{Snapshot: snap, LeaveOut: []string{dir}}, backup.Source{Name: "root.pxar", Path: src})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Meta.Skipped) != 1 {
		t.Errorf("Meta.Skipped %q, want the store", res.Meta.Skipped)
	}
	px := openPxar(t, fixture.OpenStore(t, dir), snap, nil)
	if _, err := px.Archive.LookupPath("keep"); err != nil {
		t.Errorf("keep: %v", err)
	}
	if _, err := px.Archive.LookupPath("st"); err == nil {
		t.Error("the datastore written to is in the archive")
	}
}
