package restore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// startStore wraps a store: the first ReadChunk closes started; every read
// is counted by digest.
type startStore struct {
	chunkstore.Store
	once    sync.Once
	started chan struct{}
	mu      sync.Mutex
	reads   map[crypto.Digest]int
}

func (s *startStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	s.once.Do(func() { close(s.started) })
	s.mu.Lock()
	s.reads[d]++
	s.mu.Unlock()
	return s.Store.ReadChunk(ctx, d, buf, limit)
}

// TestRunResumeOverlaps: a resume reads the journaled chunks back from the
// target while the others are fetched, not first: the check of the first
// durable chunk waits for a fetch to start (and fails the test after 30s
// of waiting). Durable chunks found whole are not fetched; one changed on
// the target since is fetched after; the result is byte-exact. --jobs 1
// does not make the check serial.
func TestRunResumeOverlaps(t *testing.T) {
	data := fixture.Build(31, fixture.Region{Kind: fixture.Random, Len: 8 * cs})
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	store := &startStore{Store: fixture.OpenStore(t, dir), started: make(chan struct{}), reads: map[crypto.Digest]int{}}
	plan, _ := restoretest.LoadPlan(t, store, snap, nil)
	if len(plan.Chunks) != 8 {
		t.Fatalf("plan has %d chunks, want 8", len(plan.Chunks))
	}
	// The interrupted restore wrote chunks 0-5 (5 changed since); the
	// journal names them; 6 and 7 are still to fetch.
	partial := append([]byte(nil), data[:6*cs]...)
	partial[5*cs+100] ^= 0xff
	out := fixture.WriteFile(t, t.TempDir(), "out.raw", append(partial, make([]byte, 2*cs)...))
	durable := map[crypto.Digest]bool{}
	for i := range 6 {
		durable[plan.Chunks[i].Digest] = true
	}
	ft, err := filetarget.Open(out, int64(plan.Size), filetarget.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	waited := false
	opts := restore.Options{Jobs: 1, Fetchers: 1, Archive: "x", Held: func(*restore.Chunk) {
		once.Do(func() {
			select {
			case <-store.started:
			case <-time.After(30 * time.Second):
				waited = true
			}
		})
	}}
	resumed, err := restore.RunResume(context.Background(), store, plan, ft, ft, durable, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ft.Close(false); err != nil {
		t.Fatal(err)
	}
	if waited {
		t.Error("no chunk was fetched while the durable chunks were checked: the check ran first")
	}
	if resumed != 5 {
		t.Errorf("resumed %d chunks, want 5", resumed)
	}
	for i, c := range plan.Chunks {
		want := 0
		if i >= 5 {
			want = 1
		}
		if got := store.reads[c.Digest]; got != want {
			t.Errorf("chunk %d fetched %d times, want %d", i, got, want)
		}
	}
	fixture.Equal(t, out, data)
}
