package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestProgressFlag: --progress lines with a short interval logs lines on a
// non-terminal stderr during a restore; none prints nothing; bar draws on
// a non-terminal too; bad values are usage errors.
func TestProgressFlag(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(51)
	backupImage(t, store, data)
	dir := t.TempDir()
	r := mustOK(t, "restore", "--store", store, "--progress", "lines", "--progress-interval", "1ns", snap0, "drive-scsi0", filepath.Join(dir, "a.raw"))
	if !strings.Contains(r.err, "restore: progress ") || !strings.Contains(r.err, " MiB of ") {
		t.Errorf("--progress lines: no progress line on stderr: %v", r)
	}
	r = mustOK(t, "restore", "--store", store, "--progress", "none", "--progress-interval", "1ns", snap0, "drive-scsi0", filepath.Join(dir, "b.raw"))
	if strings.Contains(r.err, "progress") {
		t.Errorf("--progress none printed progress: %v", r)
	}
	mustOK(t, "restore", "--store", store, "--progress", "bar", snap0, "drive-scsi0", filepath.Join(dir, "c.raw"))
	mustFail(t, 2, []string{"--progress must be"}, "verify", "--store", store, "--progress", "sometimes")
	mustFail(t, 2, []string{"--progress-interval"}, "backup", "--store", store, "--progress-interval", "0s", "a.img:/dev/null")
}
