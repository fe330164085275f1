package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestMergeFreshDistinct: the merged report of incremental shards counts
// distinct chunks skipped as fresh and confirmed present, as one run's
// report does (and as it counts chunks checked), not the archives' sum.
func TestMergeFreshDistinct(t *testing.T) {
	store, snaps, ds := sharedStore(t, nil)
	distinct := map[crypto.Digest]bool{}
	for _, l := range ds {
		for _, d := range l {
			distinct[d] = true
		}
	}
	var first, second []verify.Report
	for i := range 2 {
		sh := verify.Shard{Index: i, Count: 2}
		st := verify.NewState(store, time.Hour)
		for _, out := range []*[]verify.Report{&first, &second} {
			rep, err := verify.New(fixture.OpenStore(t, store), verify.Options{Shard: sh, State: st}).Run(context.Background(), snaps, nil)
			if err != nil || !rep.OK {
				t.Fatalf("shard %s: %v %+v", sh, err, rep)
			}
			rep.Shard = sh.String()
			*out = append(*out, rep)
		}
	}
	m1, err := verify.Merge(first)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := verify.Merge(second)
	if err != nil {
		t.Fatal(err)
	}
	if n := uint64(len(distinct)); m1.ChunksChecked != n || m2.ChunksChecked != 0 || m2.ChunksFresh != int(n) || m2.ChunksPresent != int(n) {
		t.Errorf("merged: first %d checked; second %d checked, %d fresh, %d present; want %d, then 0 checked, %d fresh and present",
			m1.ChunksChecked, m2.ChunksChecked, m2.ChunksFresh, m2.ChunksPresent, n, n)
	}
}
