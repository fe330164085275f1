package restore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
)

// failingStore answers reads of one digest with an error of its own (an
// outside cause, an unclassified one) and the rest from the store below.
type failingStore struct {
	chunkstore.Store
	victim crypto.Digest
	err    error
}

func (s *failingStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	if d == s.victim {
		return nil, s.err
	}
	return s.Store.ReadChunk(ctx, d, buf, limit)
}

// TestDamagePolicy: what Run does with a chunk that cannot be restored,
// by how it failed and by OnMissing/OnCorrupt and KeepGoing. A proven
// missing or damaged chunk is zeroed (exactly its range, the rest restored
// and the target synced, a *DamagedError with Zeroed) or fails the run as a
// *ChunkError naming it; KeepGoing lists it in a *DamagedError without
// zeroing. An error that proves nothing about the chunk (the store
// unavailable, an error no one classified) stops the run whatever the
// policy: never zeroed, never listed as damage.
func TestDamagePolicy(t *testing.T) {
	img := fixture.Mixed(6*cs, 21)
	dir, snap := restoretest.SnapshotOf(t, img, nil)
	const victim = 3
	type outcome int
	const (
		zeroed  outcome = iota // nil error or *DamagedError{Zeroed}; the victim's range zero, the rest restored
		failed                 // *ChunkError naming the victim (proven), the victim's range not zeroed
		listed                 // *DamagedError listing the victim, not zeroed
		stopped                // an error that is no damage: not *DamagedError, victim not zeroed
	)
	missing := func(t *testing.T, p string) { os.Remove(p) }
	corrupt := func(t *testing.T, p string) { fixture.FlipByte(t, p, -1) }
	outside := fmt.Errorf("bucket said 503 for ten minutes: %w", chunkstore.ErrUnavailable)
	unclassified := errors.New("quota exceeded")
	cases := []struct {
		name      string
		mutate    func(t *testing.T, p string) // on the victim's chunk file
		readErr   error                        // or: the store answers this for the victim
		onMissing restore.Damage
		onCorrupt restore.Damage
		keepGoing bool
		want      outcome
		wantIs    error
	}{
		{"missing/fail", missing, nil, restore.DamageFail, restore.DamageZero, false, failed, chunkstore.ErrNotFound},
		{"missing/zero", missing, nil, restore.DamageZero, restore.DamageFail, false, zeroed, nil},
		{"corrupt/fail", corrupt, nil, restore.DamageZero, restore.DamageFail, false, failed, chunkstore.ErrCRC},
		{"corrupt/zero", corrupt, nil, restore.DamageFail, restore.DamageZero, false, zeroed, nil},
		{"empty-is-missing/zero", func(t *testing.T, p string) { os.Truncate(p, 0) }, nil, restore.DamageZero, restore.DamageFail, false, zeroed, nil},
		{"missing/keep-going", missing, nil, restore.DamageFail, restore.DamageFail, true, listed, chunkstore.ErrNotFound},
		{"corrupt/keep-going-zero", corrupt, nil, restore.DamageZero, restore.DamageZero, true, listed, chunkstore.ErrCRC},
		{"outside/zero", nil, outside, restore.DamageZero, restore.DamageZero, false, stopped, chunkstore.ErrUnavailable},
		{"outside/keep-going", nil, outside, restore.DamageZero, restore.DamageZero, true, stopped, chunkstore.ErrUnavailable},
		{"outside-and-missing/zero", nil, chunkstore.JoinErrors(outside, chunkstore.ErrNotFound), restore.DamageZero, restore.DamageZero, false, stopped, chunkstore.ErrUnavailable},
		{"unclassified/zero", nil, unclassified, restore.DamageZero, restore.DamageZero, false, stopped, unclassified},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := fixture.CopyDir(t, dir, t.TempDir()+"/s")
			var store chunkstore.Store = fixture.OpenStore(t, d)
			plan, _ := restoretest.LoadPlan(t, store, snap, nil)
			vd := plan.Chunks[victim].Digest
			if c.mutate != nil {
				c.mutate(t, fixture.ChunkPath(d, vd))
			} else {
				store = &failingStore{Store: store, victim: vd, err: c.readErr}
			}
			opts := restore.Options{Jobs: 2, Writers: 2, Archive: "vm/100/x/drive-scsi0.img.fidx",
				OnMissing: c.onMissing, OnCorrupt: c.onCorrupt, KeepGoing: c.keepGoing}
			tgt := newMemTarget(len(img))
			err := restore.Run(context.Background(), store, plan, tgt, opts, nil)
			var de *restore.DamagedError
			var ce *restore.ChunkError
			isDamaged := errors.As(err, &de)
			cause := err
			if isDamaged && len(de.Chunks) == 1 {
				cause = de.Chunks[0] // a DamagedError lists its chunks' errors
			}
			if c.wantIs != nil && !errors.Is(cause, c.wantIs) {
				t.Errorf("error %v, want one wrapping %v", err, c.wantIs)
			}
			got := tgt.bytes()[victim*cs : (victim+1)*cs]
			switch c.want {
			case zeroed:
				if err != nil && (!isDamaged || !de.Zeroed || de.Count != 1) {
					t.Fatalf("error %v, want nil or a DamagedError with one chunk zeroed", err)
				}
				if !bytes.Equal(got, make([]byte, cs)) {
					t.Errorf("the damaged chunk's range is not zero")
				}
				want := append(append(append([]byte{}, img[:victim*cs]...), make([]byte, cs)...), img[(victim+1)*cs:]...)
				fixture.EqualBytes(t, "target", tgt.bytes(), want)
				if !tgt.synced {
					t.Errorf("target not synced")
				}
			case failed:
				if isDamaged || !errors.As(err, &ce) || ce.Digest != vd {
					t.Fatalf("error %v, want a ChunkError naming chunk %s", err, vd)
				}
			case listed:
				if !isDamaged || de.Zeroed || de.Count != 1 || len(de.Chunks) != 1 || de.Chunks[0].Digest != vd {
					t.Fatalf("error %v, want a DamagedError listing chunk %s, not zeroed", err, vd)
				}
			case stopped:
				if err == nil || isDamaged || chunkstore.Proven(err) {
					t.Fatalf("error %v, want one that proves no damage", err)
				}
			}
			if c.want != zeroed && bytes.Equal(got, make([]byte, cs)) {
				t.Errorf("the chunk's range was zeroed, want it left alone")
			}
		})
	}
}
