package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyStoreLeftOut: a verify over several --store that had to leave
// one out (unreachable) is not ok even when every snapshot it checked is:
// exit 3, the report names the store in "stores-left-out", the text says
// not everything could be verified.
func TestVerifyStoreLeftOut(t *testing.T) {
	bktSetEnv(t, "")
	ds := nsStore(t, map[string][]byte{"": fixture.Mixed(64<<10, 1)})
	bkt := "s3://bkt/store1"
	args := []string{"verify", "--store", ds, "--store", bkt, "--s3-endpoint", refusedEndpoint(t), "--retry-for", "1s"}
	r := pbs(t, append(args, "--output-format", "json")...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("%v: %v", err, r)
	}
	if r.code != exitOutside || rep.OK || rep.ExitCode != exitOutside || len(rep.StoresLeftOut) != 1 || rep.StoresLeftOut[0] != bkt || len(rep.Snapshots) != 1 {
		t.Errorf("want exit 3, not ok, %s left out, 1 snapshot checked; got %v", bkt, r)
	}
	r = pbs(t, args...)
	if r.code != exitOutside || !strings.Contains(r.out, "not everything could be verified: --store "+bkt) {
		t.Errorf("text: want exit 3 saying %s was not verified, got %v", bkt, r)
	}
}

// TestVerifyEmptyNamespace: verify of a namespace that exists but holds no
// snapshot itself (only its children do) checks nothing and exits 0 with a
// note pointing at --max-depth, in text and JSON; a namespace that does
// not exist stays an error (exit 1).
func TestVerifyEmptyNamespace(t *testing.T) {
	store := nsStore(t, map[string][]byte{"x/child": fixture.Mixed(64<<10, 1)})
	r := mustOK(t, "verify", "--store", store, "--ns", "x")
	if !strings.Contains(r.out, "no snapshots in namespace x") || !strings.Contains(r.out, "--max-depth") {
		t.Errorf("text: no note on the empty namespace: %v", r)
	}
	r = mustOK(t, "verify", "--store", store, "--ns", "x", "--output-format", "json")
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || !rep.OK || len(rep.Snapshots) != 0 || !strings.Contains(rep.Note, "no snapshots in namespace x") {
		t.Errorf("json: want ok, no snapshots and the note: %v: %v", err, r)
	}
	if r := mustOK(t, "verify", "--store", store, "--ns", "x", "--max-depth", "1", "--output-format", "json"); !strings.Contains(r.out, "x/child") {
		t.Errorf("--max-depth 1 did not verify the child: %v", r)
	}
	mustFail(t, exitData, []string{"no such namespace"}, "verify", "--store", store, "--ns", "missing")
}
