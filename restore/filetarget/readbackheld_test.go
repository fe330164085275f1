package filetarget_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestReadBackHeldFile: the read-back of drill goes through the target's
// held descriptor. The directory is moved and another file of the same
// size put at the target's path before the read-back: ReadBackFile still
// checks the restored file (and passes), where a read-back by path would
// check the impostor (and report damage that is not there, or pass over a
// file that was never verified).
func TestReadBackHeldFile(t *testing.T) {
	data := dedupImage()
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	s := fixture.OpenStore(t, dir)
	plan, _ := restoretest.LoadPlan(t, s, snap, nil)
	base := t.TempDir()
	sub := filepath.Join(base, "d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(sub, "new.img")
	ft, err := filetarget.Open(out, int64(plan.Size), filetarget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close(true)
	if err := restore.Run(context.Background(), s, plan, ft, restore.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ft.Commit(); err != nil {
		t.Fatal(err)
	}
	// Move the directory away and put an impostor at the path.
	if err := os.Rename(sub, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fixture.WriteFile(t, sub, "new.img", make([]byte, len(data)))
	if err := filetarget.ReadBackFile(context.Background(), ft.File(), out, plan, nil, 2, nil); err != nil {
		t.Fatalf("read-back of the held file: %v", err)
	}
	// The path now names the impostor: a read-back by path checks it.
	if err := filetarget.ReadBack(context.Background(), out, plan, nil, 2, nil); !errors.Is(err, restore.ErrReadBackMismatch) {
		t.Fatalf("read-back by path: got %v, want a mismatch over the impostor", err)
	}
}
