package verify_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// statFailStore is a store whose presence check (StatChunk) of one chunk
// fails with err, as a bucket refusing HEAD or a directory refusing stat.
type statFailStore struct {
	chunkstore.Store
	d   crypto.Digest
	err error
}

func (s *statFailStore) StatChunk(ctx context.Context, d crypto.Digest) (int64, error) {
	if d == s.d {
		return 0, fmt.Errorf("chunk %s: %w", d, s.err)
	}
	return chunkstore.StatChunk(ctx, s.Store, d, 0)
}

// TestConfirmErrorIsNoDamage: in a run with a state, a presence check of a
// skipped chunk that fails for a cause outside the data (403, a 405 or 412
// the store did not classify, EACCES) proves nothing: the run fails with
// that error (exit 3) and lists no damaged chunk; only a chunk
// definitively not there is damage.
func TestConfirmErrorIsNoDamage(t *testing.T) {
	store, snaps, ds := sharedStore(t, nil)
	d := ds[snaps[2].String()][5]
	for _, tc := range []struct {
		name string
		err  error
		exit int
	}{
		{"403", fmt.Errorf("%w: 403 AccessDenied", chunkstore.ErrDenied), 3},
		{"405 unclassified", errors.New("HTTP 405 Method Not Allowed"), 3},
		{"500 after retries", fmt.Errorf("%w: 500", chunkstore.ErrUnavailable), 3},
		{"EACCES", fmt.Errorf("stat: %w", syscall.EACCES), 3},
		{"not found", fmt.Errorf("%w (NoSuchKey)", chunkstore.ErrNotFound), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := verify.NewState(store, time.Hour)
			if rep, err := verify.New(fixture.OpenStore(t, store), verify.Options{State: st}).Run(context.Background(), snaps, nil); err != nil || !rep.OK {
				t.Fatalf("first run: %v, ok %v", err, rep.OK)
			}
			s := &statFailStore{Store: fixture.OpenStore(t, store), d: d, err: tc.err}
			v := verify.New(s, verify.Options{State: st})
			rep, _ := v.Run(context.Background(), snaps, nil)
			want := 0
			if tc.exit == 1 {
				want = 1
			}
			if rep.OK || int(rep.DamagedChunks) != want || (v.Outside() != nil) != (tc.exit == 3) {
				t.Fatalf("ok %v, %d damaged chunks, outside failure %v; want %d damaged, an outside failure %v", rep.OK, rep.DamagedChunks, v.Outside(), want, tc.exit == 3)
			}
			if tc.exit == 3 && !errors.Is(v.Outside(), tc.err) {
				t.Errorf("Outside() = %v, want the check's error", v.Outside())
			}
			if tc.exit == 3 && !st.Fresh(d, cs, false, time.Now()) {
				t.Error("the state forgot a chunk that was not proven damaged")
			}
		})
	}
}
