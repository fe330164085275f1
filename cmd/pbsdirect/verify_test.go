package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyMillionMissing: an incomplete copy of a large disk, 1 M chunks
// none of which is in the store, costs verify less than 300 MiB and less
// than 1 MB of output by default (text and JSON), exits 1, and counts every
// damaged chunk while listing the first verify.DefaultMaxDamaged.
func TestVerifyMillionMissing(t *testing.T) {
	fixture.SkipIfShort(t)
	const n = 1 << 20
	store := fixture.NewStore(t)
	fixture.ManyChunks(t, store, fixture.Snap(t, "", "vm", "100", fixture.T0), n, 64<<10)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			r := pbsProc(t, nil, "verify", "--store", store, "--output-format", format)
			t.Logf("%s: exit %d, peak RSS %d MiB, %d bytes of output", format, r.code, r.maxRSS>>20, len(r.out)+len(r.err))
			if r.code != 1 {
				t.Fatalf("want exit 1: %v", r.result)
			}
			if r.maxRSS > 300<<20 || r.maxRSS == 0 {
				t.Errorf("peak RSS %d MiB, want less than 300", r.maxRSS>>20)
			}
			if len(r.out)+len(r.err) > 1e6 {
				t.Errorf("%d bytes of output, want less than 1 MB", len(r.out)+len(r.err))
			}
			if format != "json" {
				return
			}
			var rep verify.Report
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.DamagedChunks != n || rep.DamagedUnlisted != n-verify.DefaultMaxDamaged || len(rep.Snapshots[0].Archives[0].Damaged) != verify.DefaultMaxDamaged {
				t.Errorf("damaged %d, unlisted %d; want %d and %d", rep.DamagedChunks, rep.DamagedUnlisted, n, n-verify.DefaultMaxDamaged)
			}
		})
	}
}

// TestVerifyMissingAndDamaged: verify tells a missing chunk from a damaged
// one, in text ("missing chunk", "damaged chunk") and JSON ("missing"), and
// its counts add up: of three chunks, one verified and two damaged or
// missing.
func TestVerifyMissingAndDamaged(t *testing.T) {
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(12<<20, 3))
	snap, err := index.ParseSnapshotRef(snap0)
	if err != nil {
		t.Fatal(err)
	}
	_, ds := fixture.Digests(t, fixture.SnapPath(store, snap, "drive-scsi0.img.fidx"))
	if len(ds) != 3 {
		t.Fatalf("%d chunks, want 3", len(ds))
	}
	if err := os.Remove(fixture.ChunkPath(store, ds[1])); err != nil {
		t.Fatal(err)
	}
	fixture.FlipByte(t, fixture.ChunkPath(store, ds[2]), 20)
	r := pbs(t, "verify", "--store", store, snap0)
	for _, want := range []string{"(1 chunk verified, 2 damaged or missing)", "missing chunk " + ds[1].String(), "damaged chunk " + ds[2].String(),
		"1 chunk verified, 2 damaged or missing in "} {
		if !strings.Contains(r.out, want) {
			t.Errorf("verify output lacks %q: %v", want, r)
		}
	}
	if r.code != 1 || strings.Contains(r.out, "damaged chunk "+ds[1].String()) {
		t.Errorf("want exit 1 and the deleted chunk called missing: %v", r)
	}
	r = pbs(t, "verify", "--output-format", "json", "--store", store, snap0)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	missing := map[string]bool{}
	for _, d := range rep.Snapshots[0].Archives[0].Damaged {
		missing[d.Digest] = d.Missing
	}
	if len(missing) != 2 || !missing[ds[1].String()] || missing[ds[2].String()] {
		t.Errorf("JSON damaged chunks %v: want %s missing, %s not", missing, ds[1], ds[2])
	}
	// --damaged-list replaces the file by a rename: another name of the
	// old file keeps its content.
	dir := t.TempDir()
	old, list := filepath.Join(dir, "old"), filepath.Join(dir, "list")
	if err := os.WriteFile(old, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(old, list); err != nil {
		t.Fatal(err)
	}
	if r := pbs(t, "verify", "--damaged-list", list, "--store", store, snap0); r.code != 1 {
		t.Errorf("verify --damaged-list: %v", r)
	}
	if b, _ := os.ReadFile(old); string(b) != "keep\n" {
		t.Errorf("--damaged-list wrote through a hard link: %q", b)
	}
	if b, _ := os.ReadFile(list); strings.Count(string(b), "\n") != 2 {
		t.Errorf("damaged list: %q, want 2 lines", b)
	}
	// A report replacing one keeps its mode (a private report stays so).
	report := filepath.Join(dir, "report.json")
	if err := os.WriteFile(report, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pbs(t, "verify", "--report", report, "--store", store, snap0)
	if st, err := os.Stat(report); err != nil || st.Mode().Perm() != 0o600 || st.Size() == 0 {
		t.Errorf("report replaced with mode %v size %d (%v); want 0600 and the report", st.Mode(), st.Size(), err)
	}
}
