package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestPlanOf plans an archive straight from a snapshot reader, with its
// key; an archive the manifest does not list is an error; once the
// snapshot is pruned the error wraps snapshot.ErrRemoved.
func TestPlanOf(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(10*cs+77, 5)
	_, cc := fixture.Key(t, 4)
	dir, snap := restoretest.SnapshotOf(t, data, cc)
	src := openReader(t, dir, "vm/100", cc)

	plan, fi, err := restore.PlanOf(ctx, src, "drive-scsi0.img.fidx")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Size != uint64(len(data)) || fi.Filename != "drive-scsi0.img.fidx" {
		t.Errorf("plan of %d bytes for %s, want %d bytes for drive-scsi0.img.fidx", plan.Size, fi.Filename, len(data))
	}
	if _, _, err := restore.PlanOf(ctx, src, "other.img.fidx"); err == nil || errors.Is(err, snapshot.ErrRemoved) {
		t.Errorf("an archive not in the manifest: %v", err)
	}
	if err := os.RemoveAll(filepath.Dir(fixture.SnapPath(dir, snap, snapshot.ManifestName))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := restore.PlanOf(ctx, src, "drive-scsi0.img.fidx"); !errors.Is(err, snapshot.ErrRemoved) {
		t.Errorf("a pruned snapshot: %v, want snapshot.ErrRemoved", err)
	}
}
