package snapshot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestReaderDamagedManifestFallsThrough: on a chain, a manifest copy that
// fails its check (CRC) in the first store is passed over, with a warning
// naming the store and the damage, and the reader pins the next store
// holding an intact copy. Damaged in every store, the error proves the
// damage; damaged in the only store opened while another was left out, it
// proves nothing (outside the data).
func TestReaderDamagedManifestFallsThrough(t *testing.T) {
	dirA, _ := datastore(t)
	dirB, _ := datastore(t)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fixture.FlipByte(t, fixture.SnapPath(dirA, snap, snapshot.ManifestName), -5)
	a, b := fixture.OpenStore(t, dirA), fixture.OpenStore(t, dirB)

	chain, err := chunkstore.NewChain(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	chain.WarnTo(func(msg string) { said = append(said, msg) })
	r, err := snapshot.Open(ctx, chain, nil, snap.String(), nil)
	if err != nil {
		t.Fatalf("manifest damaged in the first store only: %v", err)
	}
	if r.Pinned() != chunkstore.Store(b) {
		t.Errorf("pinned to %v, want the store with the intact copy (%v)", r.Pinned(), b)
	}
	if w := strings.Join(said, "\n"); !strings.Contains(w, a.String()) || !strings.Contains(w, "damaged") {
		t.Errorf("warnings %q: none names %s and the damage", w, a)
	}

	damagedB, _ := datastore(t)
	fixture.FlipByte(t, fixture.SnapPath(damagedB, snap, snapshot.ManifestName), -5)
	both, err := chunkstore.NewChain(a, fixture.OpenStore(t, damagedB))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Open(ctx, both, nil, snap.String(), nil); !chunkstore.Damaged(err) {
		t.Errorf("manifest damaged in every store: %v, want proven damage", err)
	}

	partial, err := chunkstore.NewPartialChain([]chunkstore.Store{a}, []error{fmt.Errorf("--store s3://b/x left out: %w", chunkstore.ErrUnavailable)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Open(ctx, partial, nil, snap.String(), nil); err == nil || chunkstore.Proven(err) || !chunkstore.Outside(err) {
		t.Errorf("manifest damaged, another store left out: %v, want an error outside the data", err)
	}
}
