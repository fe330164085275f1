package archive_test

import (
	"bytes"
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

// promoteStore holds each chunk read made as background work until its
// context is promoted (ratelimit.Background), release is closed or 10 s
// pass, and counts the reads that were promoted.
type promoteStore struct {
	chunkstore.Store
	release        chan struct{}
	promoted, held atomic.Int64
}

func (s *promoteStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	if ratelimit.IsBackground(ctx) {
		s.held.Add(1)
		for end := time.Now().Add(10 * time.Second); ratelimit.IsBackground(ctx) && time.Now().Before(end); {
			select {
			case <-s.release:
				return s.Store.ReadChunk(ctx, d, buf, limit)
			case <-time.After(5 * time.Millisecond):
			}
		}
		if !ratelimit.IsBackground(ctx) {
			s.promoted.Add(1)
		}
	}
	return s.Store.ReadChunk(ctx, d, buf, limit)
}

// TestReadAheadPromoted: a read that needs a chunk still being read ahead
// promotes that read to a demanded one (under a rate limit it then goes
// before the other read-ahead), and gets the right bytes.
func TestReadAheadPromoted(t *testing.T) {
	b := newBase(t, nil)
	s := &promoteStore{Store: fixture.OpenStore(t, b.dir), release: make(chan struct{})}
	r, err := b.open(t, s, nil, archive.Options{Fetchers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer close(s.release) // before the Reader closes (t.Cleanup)
	p := make([]byte, 4096)
	for _, off := range []int64{0, 40 << 10, 70 << 10} {
		if _, err := r.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
	}
	// Chunk 2 is being read ahead, held by the store: reading it promotes
	// it.
	for end := time.Now().Add(10 * time.Second); s.held.Load() == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	off := int64(2*chunk64K + 100)
	if _, err := r.ReadAt(p, off); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, b.data[off:off+int64(len(p))]) {
		t.Error("wrong bytes read from a promoted read-ahead")
	}
	if s.promoted.Load() != 1 {
		t.Errorf("%d read-ahead loads promoted, want 1 (chunk 2)", s.promoted.Load())
	}
}
