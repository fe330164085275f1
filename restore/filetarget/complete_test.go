package filetarget_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestCheckFile: CheckFile finds a file holding the image whole, counts
// the chunk positions that differ, does not read a file of another size,
// refuses a file a restore holds locked (ErrTargetBusy) and one reached
// through a symbolic link, and never changes the file.
func TestCheckFile(t *testing.T) {
	data := dedupImage()
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	plan, _ := restoretest.LoadPlan(t, fixture.OpenStore(t, dir), snap, nil)
	ctx := context.Background()
	base := t.TempDir()
	whole := fixture.WriteFile(t, base, "whole.img", data)
	c, err := filetarget.CheckFile(ctx, whole, plan, nil, 2)
	if err != nil || !c.Whole(plan) || c.Chunks == 0 || c.Mismatch != nil {
		t.Fatalf("whole file: %+v, %v", c, err)
	}
	changed := append([]byte(nil), data...)
	changed[0] ^= 1
	c, err = filetarget.CheckFile(ctx, fixture.WriteFile(t, base, "changed.img", changed), plan, nil, 2)
	if err != nil || c.Whole(plan) || c.Differ == 0 || !errors.Is(c.Mismatch, restore.ErrReadBackMismatch) {
		t.Fatalf("changed file: %+v, %v", c, err)
	}
	c, err = filetarget.CheckFile(ctx, fixture.WriteFile(t, base, "short.img", data[:len(data)-1]), plan, nil, 2)
	if err != nil || c.Whole(plan) || c.Size != int64(len(data)-1) || c.Chunks != 0 {
		t.Fatalf("short file: %+v, %v", c, err)
	}
	link := filepath.Join(base, "link.img")
	if err := os.Symlink(whole, link); err != nil {
		t.Fatal(err)
	}
	if _, err := filetarget.CheckFile(ctx, link, plan, nil, 2); err == nil {
		t.Fatal("a symbolic link was followed")
	}
	f, err := os.Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := filetarget.CheckFile(ctx, whole, plan, nil, 2); !errors.Is(err, restore.ErrTargetBusy) {
		t.Fatalf("a locked file: got %v, want ErrTargetBusy", err)
	}
	fixture.Equal(t, whole, data)
}
