package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestResumeSummaryText: the text summary of a --resume says how many
// chunks were already on the target (as JSON's resumed-chunks does), and
// the encoded bytes read are not left beside "0 chunks fetched" as if
// they were data: the failed copies read are said to be in them.
func TestResumeSummaryText(t *testing.T) {
	data := failoverImage()
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "64")
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	flipByte(t, chunkFile(store, ds[4]))
	target := filepath.Join(t.TempDir(), "disk.raw")
	mustFail(t, 1, []string{"--resume"}, "restore", "--store", store, snap0, "drive-scsi0", target)
	r := pbs(t, "restore", "--resume", "--on-corrupt", "zero", "--store", store, snap0, "drive-scsi0", target)
	if r.code != 1 {
		t.Fatalf("want exit 1 (restored with damage): %v", r)
	}
	for _, w := range []string{"resumed: 15 chunks already on the target", "chunks fetched and verified: 0 (", "the copies that failed their check included"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("text summary lacks %q: %v", w, r)
		}
	}
	// A fresh restore has nothing resumed and no failed copies to explain.
	fresh := fixture.NewStore(t)
	backupImage(t, fresh, data, "--chunk-size", "64")
	r = mustOK(t, "restore", "--store", fresh, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "fresh.raw"))
	if strings.Contains(r.out, "resumed:") || !strings.Contains(r.out, "chunks fetched: ") {
		t.Errorf("fresh restore: %v", r)
	}
}
