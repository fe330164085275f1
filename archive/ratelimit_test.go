package archive_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// priorityStore counts the chunk reads made as background work
// (ratelimit.Background) and as demanded reads.
type priorityStore struct {
	chunkstore.Store
	background, demand atomic.Int64
}

func (s *priorityStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	if ratelimit.IsBackground(ctx) {
		s.background.Add(1)
	} else {
		s.demand.Add(1)
	}
	return s.Store.ReadChunk(ctx, d, buf, limit)
}

// TestReadAheadIsBackground: chunks read ahead are read as background work,
// so that under --rate demanded reads (mount, serve-nbd) take the rate
// first; the chunks a reader asks for are read as demanded.
func TestReadAheadIsBackground(t *testing.T) {
	b := newBase(t, nil)
	s := &priorityStore{Store: fixture.OpenStore(t, b.dir)}
	r, err := b.open(t, s, nil, archive.Options{Fetchers: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	for _, off := range []int64{0, 40 << 10, 70 << 10} {
		if _, err := r.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats().ReadAhead.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r.Close()
	if got := s.demand.Load(); got != 2 {
		t.Errorf("%d chunk reads demanded, want 2 (chunks 0 and 1)", got)
	}
	if got := s.background.Load(); got != 3 || r.Stats().ReadAhead.Load() != 3 {
		t.Errorf("%d chunk reads as background work, %d read ahead; want 3 and 3", got, r.Stats().ReadAhead.Load())
	}
}
