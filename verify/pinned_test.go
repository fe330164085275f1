package verify_test

import (
	"context"
	"os"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyPinnedMember: on a chain of stores, a snapshot's indexes and
// blobs are checked from the member that holds its manifest
// (snapshot.Reader), not from an earlier member that holds a stale copy
// of an index without the manifest: the snapshot verifies OK.
func TestVerifyPinnedMember(t *testing.T) {
	store, snaps, _ := sharedStore(t, nil)
	snap := snaps[0]
	stale := fixture.NewStore(t)
	if err := os.MkdirAll(fixture.SnapPath(stale, snap, ""), 0o755); err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(fixture.SnapPath(store, snap, "drive-scsi0.img.fidx"))
	if err != nil {
		t.Fatal(err)
	}
	p := fixture.WriteFile(t, fixture.SnapPath(stale, snap, ""), "drive-scsi0.img.fidx", idx)
	fixture.FlipByte(t, p, -1) // its csum no longer matches the manifest
	chain, err := chunkstore.NewChain(fixture.OpenStore(t, stale), fixture.OpenStore(t, store))
	if err != nil {
		t.Fatal(err)
	}
	r := verify.New(chain, verify.Options{}).Snapshot(context.Background(), snap)
	if !r.OK || len(r.Archives) != 1 {
		t.Fatalf("%s: %+v, want OK from the member with the manifest", snap, r)
	}
}
