package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestAllZeroAndWidths: an all-zero image (no chunk to fetch) restores as a
// sparse file; pipeline widths from 1 to many give the same bytes.
func TestAllZeroAndWidths(t *testing.T) {
	zero := make([]byte, 12<<20)
	store := fixture.NewStore(t)
	backupImage(t, store, zero)
	target := filepath.Join(t.TempDir(), "zero.raw")
	s := restoreJSON(t, "--store", store, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, zero)
	if s.ChunksFetched != 0 || s.ZeroChunks != 3 || s.DataBytes != 0 {
		t.Errorf("all-zero: %+v", s)
	}
	st, _ := os.Stat(target)
	if b := st.Sys().(*syscall.Stat_t).Blocks * 512; b > 64<<10 {
		t.Errorf("all-zero restore allocated %d bytes", b)
	}
	garbage := fixture.WriteFile(t, t.TempDir(), "g.raw", fixture.Mixed(13<<20, 3))
	restoreJSON(t, "--store", store, "--force", snap0, "drive-scsi0", garbage)
	fixture.Equal(t, garbage, zero)

	data := fixture.Mixed(3<<20+99, 8)
	store2 := fixture.NewStore(t)
	backupImage(t, store2, data, "--chunk-size", "64")
	for _, w := range [][2]int{{1, 1}, {1, 4}, {3, 1}, {8, 64}} {
		target := filepath.Join(t.TempDir(), "w.raw")
		s := restoreJSON(t, "--store", store2, "-j", fmt.Sprint(w[0]), "--fetchers", fmt.Sprint(w[1]), snap0, "drive-scsi0", target)
		fixture.Equal(t, target, data)
		if s.Jobs != w[0] || s.Fetchers != w[1] {
			t.Errorf("jobs %d fetchers %d, want %v", s.Jobs, s.Fetchers, w)
		}
		mustOK(t, "verify", "--store", store2, "-j", fmt.Sprint(w[0]), "--fetchers", fmt.Sprint(w[1]))
	}
}

// TestBackupBadChunkSize: an invalid --chunk-size is a usage error and
// writes no snapshot.
func TestBackupBadChunkSize(t *testing.T) {
	store := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", fixture.Mixed(100<<10, 1))
	for _, cs := range []string{"0", "100", "32", "8192", "-64"} {
		r := pbs(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", cs, "drive-scsi0.img:"+img)
		if r.code != 2 {
			t.Errorf("--chunk-size %s: want exit 2 (usage), got %v", cs, r)
		}
	}
	if r := mustOK(t, "snapshots", "--store", store, "--output-format", "json"); r.out != "[]\n" {
		t.Errorf("a snapshot was written: %s", r.out)
	}
}
