package backup_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// readCounter is a directory store that counts the chunk reads in flight
// and the most of them at once; each read waits a little, so that the
// reads of concurrent jobs overlap.
type readCounter struct {
	*chunkstore.Local
	inflight, peak atomic.Int64
}

func (r *readCounter) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	n := r.inflight.Add(1)
	defer r.inflight.Add(-1)
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
	time.Sleep(5 * time.Millisecond)
	return r.Local.ReadChunk(ctx, d, buf, limit)
}

// TestBackupReadBackWithinBudget: a backup that reads back chunks the
// store already has (no previous snapshot to count on: --no-previous)
// holds no more of them at once than the writer's chunk buffers
// (BufferBudget/2 in chunks of DefaultDynamicChunkSize), however many
// Jobs run: read-backs share the bounded buffers of uploads.
func TestBackupReadBackWithinBudget(t *testing.T) {
	const cs = 64 << 10
	const jobs = 96
	limit := int64(backup.BufferBudget / 2 / backup.DefaultDynamicChunkSize)
	dir := fixture.NewStore(t)
	data := fixture.Build(31, fixture.Region{Kind: fixture.Random, Len: 4 * jobs * cs})
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", data)
	src := backup.Source{Name: "drive-scsi0.img", Path: img}
	opts := backup.Options{ChunkSize: cs, Jobs: jobs, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0)}
	if _, _, err := run(t, dir, opts, src); err != nil {
		t.Fatal(err)
	}
	l, err := chunkstore.OpenLocal(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rc := &readCounter{Local: l}
	opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+60)
	opts.NoPrevious = true
	var st backup.Stats
	if _, err := backup.Run(context.Background(), rc, []backup.Source{src}, opts, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.FoundPresent.Load(); got != 4*jobs {
		t.Fatalf("%d chunks read back and found present, want %d", got, 4*jobs)
	}
	if p := rc.peak.Load(); p > limit {
		t.Errorf("%d chunk read-backs at once with --jobs %d, want at most %d (the writer's buffers)", p, jobs, limit)
	} else {
		t.Logf("at most %d read-backs at once (limit %d)", p, limit)
	}
}
