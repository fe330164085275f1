package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestRestoreGuestConfigInStoreRefused: a --config path inside the
// datastore restored from (directly, or through a symbolic link with
// --follow-symlinks --force), in a directory that is not there, or a
// disk's target, is refused with exit 2 before any disk is written: DIR
// stays empty and the store gains no file.
func TestRestoreGuestConfigInStoreRefused(t *testing.T) {
	fixture.SkipIfShort(t)
	store := guestStore(t)
	for _, c := range []struct {
		name  string
		flags func(t *testing.T, out, link string) []string
		want  []string
	}{
		{"inside the store", func(t *testing.T, _, _ string) []string {
			return []string{"--config", filepath.Join(store, "vm", "100", "qemu.conf")}
		}, []string{"qemu.conf", "datastore"}},
		{"a link into the store", func(t *testing.T, _, link string) []string {
			fixture.WriteFile(t, filepath.Join(store, "vm", "100"), "old.conf", []byte("x"))
			if err := os.Symlink(filepath.Join(store, "vm", "100", "old.conf"), link); err != nil {
				t.Fatal(err)
			}
			return []string{"--force", "--follow-symlinks", "--config", link}
		}, []string{"cfg", "datastore"}},
		{"no such directory", func(t *testing.T, _, _ string) []string {
			return []string{"--config", filepath.Join(t.TempDir(), "none", "x.conf")}
		}, []string{"x.conf", "no such directory"}},
		{"a disk's target", func(t *testing.T, out, _ string) []string {
			return []string{"--config", filepath.Join(out, "drive-scsi0.img")}
		}, []string{"--config", "drive-scsi0.img.fidx"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, side := t.TempDir(), t.TempDir()
			flags := c.flags(t, out, filepath.Join(side, "cfg"))
			mustFail(t, 2, c.want, append(append([]string{"restore-guest", "--store", store}, flags...), "vm/100", out)...)
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("the refused run left %d entries in DIR", len(ents))
			}
			if _, err := os.Stat(filepath.Join(store, "vm", "100", "qemu.conf")); err == nil {
				t.Errorf("the configuration was written into the store")
			}
			os.Remove(filepath.Join(store, "vm", "100", "old.conf"))
		})
	}
}
