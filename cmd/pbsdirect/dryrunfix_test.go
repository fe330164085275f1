package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestDryRunMatchesRun: a dry run says what the run would: onto an
// existing file without --force it is refused as the run is (exit 2);
// to standard output it plans the fetches (exit 0); a drill's says it
// reads the whole target back; without --assume-rate no time is
// estimated (it says how to get one); a chunk missing from a directory
// store, known from the stat without --check-present, is counted and
// exits 1; a --price-table with an unknown key or a negative price is
// refused (exit 2). Before, the first exited 0, the second 2, the drill
// said nothing of the read-back, the time came from the index read, the
// missing chunk exited 0 and the price table was taken.
func TestDryRunMatchesRun(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, _ := deltaImages()
	store := t.TempDir()
	backupDeltaPair(t, old, nw, "--store", store)
	existing := fixture.WriteFile(t, t.TempDir(), "disk.img", []byte("older"))
	mustFail(t, 2, []string{"exists"}, "restore", "--store", store, "--dry-run", snap1, "drive-scsi0", existing)
	mustFail(t, 2, []string{"exists"}, "drill", "--store", store, "--dry-run", snap1, "drive-scsi0", existing)

	r := mustOK(t, "restore", "--store", store, "--dry-run", snap1, "drive-scsi0", "-")
	if !strings.Contains(r.out, "to fetch:") {
		t.Errorf("dry run to standard output: %s", r.out)
	}
	if strings.Contains(r.out, "estimated time: ") && !strings.Contains(r.out, "--assume-rate") {
		t.Errorf("a time estimated without --assume-rate: %s", r.out)
	}
	if rep := dryReport(t, mustOK(t, "restore", "--store", store, "--dry-run", "--output-format", "json", snap1, "drive-scsi0", "-")); rep.Rate != 0 || rep.Seconds != 0 {
		t.Errorf("rate %v, %v s without --assume-rate: want none", rep.Rate, rep.Seconds)
	}
	target := filepath.Join(t.TempDir(), "drill.img")
	r = mustOK(t, "drill", "--store", store, "--dry-run", snap1, "drive-scsi0", target)
	if !strings.Contains(r.out, "read back: the whole target") {
		t.Errorf("drill dry run says nothing of the read-back: %s", r.out)
	}
	if rep := dryReport(t, mustOK(t, "drill", "--store", store, "--dry-run", "--output-format", "json", snap1, "drive-scsi0", target)); rep.ReadBackBytes != uint64(len(nw)) {
		t.Errorf("drill dry run read-back-bytes %d, want %d", rep.ReadBackBytes, len(nw))
	}

	for _, table := range []string{`{"mine": {"get-per-1000": 1, "egres-per-gib": 0.09}}`, `{"mine": {"get-per-1000": -1}}`} {
		prices := fixture.WriteFile(t, t.TempDir(), "prices.json", []byte(table))
		mustFail(t, 2, []string{"--price-table"}, "restore", "--store", store, "--dry-run", "--price-table", prices, "--price-provider", "mine", snap1, "drive-scsi0", target)
	}

	gone := sha256.Sum256(nw[5*deltaChunk : 6*deltaChunk])
	if err := os.Remove(fixture.ChunkPath(store, crypto.Digest(gone))); err != nil {
		t.Fatal(err)
	}
	r = pbs(t, "restore", "--store", store, "--dry-run", snap1, "drive-scsi0", target)
	if r.code != 1 || !strings.Contains(r.out, "MISSING: 1 chunk") {
		t.Errorf("dry run with a chunk gone (a directory store): exit %d: %s", r.code, r.out)
	}
}
