package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBlobRestoreWords: a blob restored to a file and to standard output is
// reported alike, its size in the units of every summary ("24 B") and,
// being a few bytes, without a rate.
func TestBlobRestoreWords(t *testing.T) {
	store := fixture.NewStore(t)
	dir := t.TempDir()
	conf := fixture.WriteFile(t, dir, "100.conf", []byte("memory: 2048\ncores: 2\nboot\n"))
	img := fixture.WriteFile(t, dir, "d.raw", zeroMiddle(3))
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "drive-scsi0.img:"+img, "qemu-server.conf:"+conf)
	toFile := mustOK(t, "restore", "--store", store, "vm/100", "qemu-server.conf", filepath.Join(dir, "out.conf"))
	toStdout := mustOK(t, "restore", "--store", store, "vm/100", "qemu-server.conf", "-")
	for _, line := range []string{toFile.out, toStdout.err} {
		if !strings.Contains(line, ": 27 B, verified") || strings.Contains(line, "MiB/s") || strings.Contains(line, "bytes") {
			t.Errorf("blob summary %q: want \": 27 B, verified\" and no rate", line)
		}
	}
}
