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
// sparse file; pipeline widths from 1 to many (jobs, writers, fetchers, and
// their defaults) give the same bytes; bad widths are usage errors.
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
	// jobs, writers (-1: not given), fetchers (0: not given) and what the
	// restore reports using.
	for _, w := range []struct{ jobs, writers, fetchers, wantWriters, wantFetchers int }{
		{1, 0, 1, 0, 1},  // the sequential restore
		{1, 1, 4, 1, 4},  // one writer behind one job
		{3, -1, 1, 4, 1}, // default writers: max(4, jobs/2)
		{8, 64, 64, 64, 64},
		{12, -1, 0, 6, 18}, // default fetchers: jobs + writers
	} {
		args := []string{"--store", store2, "-j", fmt.Sprint(w.jobs)}
		if w.writers >= 0 {
			args = append(args, "--writers", fmt.Sprint(w.writers))
		}
		if w.fetchers > 0 {
			args = append(args, "--fetchers", fmt.Sprint(w.fetchers))
		}
		target := filepath.Join(t.TempDir(), "w.raw")
		s := restoreJSON(t, append(args, snap0, "drive-scsi0", target)...)
		fixture.Equal(t, target, data)
		if s.Jobs != w.jobs || s.Writers != w.wantWriters || s.Fetchers != w.wantFetchers {
			t.Errorf("jobs %d writers %d fetchers %d, want %+v", s.Jobs, s.Writers, s.Fetchers, w)
		}
		mustOK(t, "verify", "--store", store2, "-j", fmt.Sprint(w.jobs), "--fetchers", fmt.Sprint(max(w.fetchers, 1)))
	}
	for _, bad := range [][]string{{"--writers", "-1"}, {"--writers", "1025"}, {"-j", "0"}, {"--fetchers", "-1"}} {
		mustFail(t, 2, []string{bad[0]}, append([]string{"restore", "--store", store2}, append(bad, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "x.raw"))...)...)
	}
	mustFail(t, 2, []string{"writers"}, "verify", "--store", store2, "--writers", "2")
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
