package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestDrill: Drill restores, reads the committed target back (counted,
// with progress) and with Remove removes the file it created; its result
// summarises as the restore command's; a failed restore leaves no
// read-back; a target kind that is no Remover is drilled and kept.
func TestDrill(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(24*cs+77, 5)
	dir, _ := restoretest.SnapshotOf(t, data, nil)
	src := openReader(t, dir, "vm/100", nil)
	for _, remove := range []bool{false, true} {
		target := filepath.Join(t.TempDir(), "drill.raw")
		var total, read int64
		dr, err := restore.Drill(ctx, src, "drive-scsi0.img.fidx", &filetarget.Sink{Path: target}, restore.DrillOptions{Jobs: 2, Remove: remove,
			Progress: func(n int64, done func() int64) func() { total = n; return func() { read = done() } }})
		if err != nil {
			t.Fatalf("remove %v: %v", remove, err)
		}
		if dr.Restore == nil || dr.ReadBack == nil || dr.ReadBack.Chunks.Load() == 0 || total != int64(len(data)) || read != total || dr.Removed != remove {
			t.Errorf("remove %v: result %+v, read-back progress %d of %d", remove, dr, read, total)
		}
		if _, err := os.Stat(target); remove != errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove %v: target after the drill: %v", remove, err)
		}
		sum := dr.Restore.Summary(time.Second)
		if sum.Snapshot != src.Snapshot().String() || sum.Archive != "drive-scsi0.img.fidx" || sum.Target != target ||
			sum.Size != uint64(len(data)) || sum.ChunksFetched == 0 || sum.Seconds != 1 || sum.Layout != "" || sum.Requests != nil || sum.DamagedBytes() != 0 {
			t.Errorf("summary %+v", sum)
		}
	}

	// A restore that fails: no read-back, no removal.
	dr, err := restore.Drill(ctx, src, "drive-scsi9.img.fidx", &filetarget.Sink{Path: filepath.Join(t.TempDir(), "x")}, restore.DrillOptions{Remove: true})
	if err == nil || dr == nil || dr.Restore != nil || dr.ReadBack != nil || dr.Removed {
		t.Errorf("drill of a missing archive: %+v, %v", dr, err)
	}

	// Another target kind that reads back but cannot be removed: it is
	// drilled and kept.
	ms := &memSink{}
	dr, err = restore.Drill(ctx, src, "drive-scsi0.img.fidx", ms, restore.DrillOptions{Remove: true})
	if err != nil || dr.ReadBack.Chunks.Load() == 0 || dr.Removed {
		t.Errorf("drill to a memory target: %+v, %v", dr, err)
	}
	fixture.EqualBytes(t, "memory target", ms.t.bytes(), data)
}

// TestSummaryDamagedBytes: DamagedBytes sums the damaged ranges.
func TestSummaryDamagedBytes(t *testing.T) {
	s := restore.Summary{DamagedRanges: []restore.Range{{Offset: 0, Length: 4096}, {Offset: 1 << 20, Length: 100}}}
	if got := s.DamagedBytes(); got != 4196 {
		t.Errorf("DamagedBytes = %d, want 4196", got)
	}
}
