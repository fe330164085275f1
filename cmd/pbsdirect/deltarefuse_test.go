package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBaseAutoRefusals: --base auto (and its dry run) is refused with
// exit 2, as README promises and the nightly script's fallback to
// --in-place needs, when the target holds another archive that the base
// snapshot lacks (the refusal names what the record says it holds) and
// when the target is a symbolic link (naming --follow-symlinks). Before,
// the first exited 1 ("archive not in manifest"), the second 3 ("too many
// levels of symbolic links").
func TestBaseAutoRefusals(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, _ := deltaImages()
	store := t.TempDir()
	a := fixture.WriteFile(t, t.TempDir(), "a.raw", old)
	b := fixture.WriteFile(t, t.TempDir(), "b.raw", nw)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64", "drive-scsi0.img:"+a)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t1str, "--chunk-size", "64",
		"drive-scsi0.img:"+b, "drive-scsi1.img:"+a)
	dir := t.TempDir()
	target := filepath.Join(dir, "disk.img")
	mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", target)
	link := filepath.Join(dir, "lnk")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		target string
		want   []string
	}{
		{"other-archive", target, []string{"refused", "its record says it holds " + snap0 + " drive-scsi0.img.fidx", "--in-place"}},
		{"symlink", link, []string{"symbolic link", "--follow-symlinks"}},
	} {
		for _, dry := range []bool{false, true} {
			args := []string{"restore", "--store", store, "--base", "auto"}
			if dry {
				args = append(args, "--dry-run")
			}
			t.Run(tc.name+map[bool]string{true: "-dry-run"}[dry], func(t *testing.T) {
				mustFail(t, 2, tc.want, append(args, snap1, "drive-scsi1", tc.target)...)
			})
		}
	}
}

// TestDeltaSummaryWords: a differential restore's summary gives the bytes
// of the image's zero chunks and, of them, those it zeroed (before: only
// the zeroed bytes, beside the count of all zero chunks); verify's dry run
// says nothing of bytes written (it writes none).
func TestDeltaSummaryWords(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, _ := deltaImages()
	store := t.TempDir()
	backupDeltaPair(t, old, nw, "--store", store)
	target := filepath.Join(t.TempDir(), "disk.img")
	mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", target)
	r := mustOK(t, "restore", "--store", store, "--base", "auto", snap1, "drive-scsi0", target)
	if want := "zero chunks not fetched: 11 (704.00 KiB, of which 128.00 KiB"; !strings.Contains(r.out, want) {
		t.Errorf("summary lacks %q:\n%s", want, r.out)
	}
	r = mustOK(t, "verify", "--store", store, "--dry-run", "vm/100")
	if strings.Contains(r.out, "written") {
		t.Errorf("verify --dry-run speaks of bytes written:\n%s", r.out)
	}
	if rep := dryReport(t, mustOK(t, "verify", "--store", store, "--dry-run", "--output-format", "json", "vm/100")); rep.Archives[0].WriteBytes != 0 {
		t.Errorf("verify --dry-run write-bytes %d, want 0", rep.Archives[0].WriteBytes)
	}
}
