package verify_test

import (
	"context"
	"strings"
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

// TestMergeNamesReports: a report that is not a shard's (verify without
// --shard) among shards' is refused naming its file and saying what it
// is, whichever comes first; without names, by position.
func TestMergeNamesReports(t *testing.T) {
	report := func(shard string) verify.Report {
		return verify.Report{Version: verify.ReportVersion, Store: "/ds", Shard: shard, Started: "2026-11-02T01:00:00Z"}
	}
	for _, c := range []struct {
		name    string
		reports []verify.Report
		names   []string
		want    string
	}{
		{"whole-last", []verify.Report{report("0/3"), report("1/3"), report("")}, []string{"a.json", "b.json", "whole.json"},
			"whole.json: not a shard report (verify ran without --shard): it cannot be merged with shards of 3"},
		{"whole-first", []verify.Report{report(""), report("1/3")}, []string{"whole.json", "b.json"},
			"b.json: shard 1/3, but whole.json is not a shard report"},
		{"two-whole", []verify.Report{report(""), report("")}, []string{"x.json", "y.json"},
			"y.json: not a shard report (verify ran without --shard), nor is x.json"},
		{"unnamed", []verify.Report{report("0/3"), report("")}, nil,
			"report 2: not a shard report"},
		{"other-count", []verify.Report{report("0/3"), report("1/4")}, []string{"a.json", "b.json"},
			"b.json: shard 1/4 is not one of 3 shards"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := verify.Merge(c.reports, c.names...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}
