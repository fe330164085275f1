package main

import (
	"encoding/json"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyMillionMissing: an incomplete copy of a large disk, 1 M chunks
// none of which is in the store, costs verify less than 300 MiB and less
// than 1 MB of output by default (text and JSON), exits 1, and counts every
// damaged chunk while listing the first verify.DefaultMaxDamaged.
func TestVerifyMillionMissing(t *testing.T) {
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
