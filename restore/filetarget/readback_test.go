package filetarget_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestReadBack restores to a file, then damages a data byte and a zero range
// of the target: ReadBack must pass before and name both ranges after.
func TestReadBack(t *testing.T) {
	data := dedupImage()
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	s := fixture.OpenStore(t, dir)
	plan, _ := restoretest.LoadPlan(t, s, snap, nil)
	out := filepath.Join(t.TempDir(), "out.raw")
	ft, err := filetarget.Open(out, int64(plan.Size), filetarget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := restore.Run(context.Background(), s, plan, ft, restore.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	ft.Close(false)
	var st restore.ReadBackStats
	if err := filetarget.ReadBack(context.Background(), out, plan, nil, 2, &st); err != nil {
		t.Fatalf("clean target: %v", err)
	}
	if st.Chunks.Load() == 0 {
		t.Fatal("nothing re-hashed")
	}
	if len(plan.Zero) == 0 {
		t.Fatal("test image needs a zero range")
	}
	fixture.FlipByte(t, out, int64(plan.Size)-1)
	z := plan.Zero[0]
	fixture.Patch(t, out, int64(z.Offset+z.Length/2), []byte{0x55})
	err = filetarget.ReadBack(context.Background(), out, plan, nil, 2, nil)
	if !errors.Is(err, restore.ErrReadBackMismatch) {
		t.Fatalf("want ErrReadBackMismatch, got %v", err)
	}
	if !strings.Contains(err.Error(), "should read as zeros") || !strings.Contains(err.Error(), "1 chunk(s) differ") {
		t.Errorf("error should name the zero range and the chunk: %v", err)
	}

	// Every chunk position damaged: one merged range, said once.
	for _, c := range plan.Chunks {
		for _, off := range plan.Offsets(&c) {
			fixture.FlipByte(t, out, int64(off))
		}
	}
	err = filetarget.ReadBack(context.Background(), out, plan, nil, 2, nil)
	if !errors.Is(err, restore.ErrReadBackMismatch) || strings.Count(err.Error(), "[") > len(plan.Zero)+1 || strings.Count(err.Error(), out) != 1 {
		t.Errorf("adjacent damaged chunks should be merged into few ranges: %v", err)
	}
}
