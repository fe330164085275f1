package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyIncrementalMissing: verify --state after a chunk was deleted
// says how many chunks it checked, skipped as fresh and confirmed present,
// and fails (exit 1) on the missing one, in text and JSON.
func TestVerifyIncrementalMissing(t *testing.T) {
	f := newFleet(t)
	snap := f.snaps[0].String()
	state := filepath.Join(t.TempDir(), "state")
	mustOK(t, "verify", "--store", f.store, "--state", state, snap)
	gone := f.digests[snap][5]
	remove(t, fixture.ChunkPath(f.store, gone))
	n := len(f.digests[snap])
	r := mustFail(t, 1, []string{"verification failed"}, "verify", "--store", f.store, "--state", state, snap)
	want := fmt.Sprintf("0 chunks verified, 1 damaged or missing, %d skipped as fresh (%d confirmed present)", n, n-1)
	if !strings.Contains(r.out, want) || !strings.Contains(r.out, "missing chunk "+gone.String()) || !strings.Contains(r.out, "FAILED") {
		t.Errorf("text report lacks %q or the missing chunk: %v", want, r)
	}
	// The missing chunk is forgotten by the state: the next run reads it.
	rep := verifyReport(t, 1, "--store", f.store, "--state", state, snap)
	if rep.ChunksChecked != 0 || rep.DamagedChunks != 1 || rep.ChunksFresh != n-1 || rep.ChunksPresent != n-1 {
		t.Errorf("JSON report: %d checked, %d damaged, %d fresh, %d present; want 0, 1, %d, %d", rep.ChunksChecked, rep.DamagedChunks, rep.ChunksFresh, rep.ChunksPresent, n-1, n-1)
	}
}

// TestReportMergeDifferentSnapshots: shards whose runs a backup came
// between saw different snapshots: report merge does not call the new
// snapshot verified (exit 3, naming it), though every shard exited 0.
func TestReportMergeDifferentSnapshots(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	shard := func(i int) string {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		mustOK(t, "verify", "--store", f.store, "--all-namespaces", "--shard", fmt.Sprintf("%d/2", i), "--report", p)
		return p
	}
	s0 := shard(0)
	common := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 4 * fleetCS})
	f.add(t, t.TempDir(), fixture.Snap(t, "", "vm", "100", fixture.T0+86400), common, 77)
	newSnap := f.snaps[len(f.snaps)-1].String()
	s1 := shard(1)
	r := mustFail(t, 3, []string{"seen by only some shards", newSnap}, "report", "merge", s0, s1)
	if !strings.Contains(r.out, "not verified: seen by shard 1/2 only, not by shard 0/2") || !strings.Contains(r.out, "checked 6 snapshot(s), 1 failed") {
		t.Errorf("text: %v", r)
	}
	r = pbs(t, "report", "merge", "--output-format", "json", s0, s1)
	var m verify.Report
	if err := json.Unmarshal([]byte(r.out), &m); err != nil || r.code != 3 || m.OK || m.ExitCode != 3 || !slices.Equal(m.NotVerified, []string{newSnap}) {
		t.Errorf("JSON merge: %v: %v", err, r)
	}
}
