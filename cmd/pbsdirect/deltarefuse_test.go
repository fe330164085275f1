package main

import (
	"os"
	"path/filepath"
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
