package filetarget_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestDeviceJournalDirRefused: a block device's journal is never put in
// (or read from) a directory of JournalDirs that another user could write
// to, where a planted link or journal would be followed: one writable by
// group or others, one owned by another user, or a symbolic link, even
// when it already holds a journal of that device. The next place, a
// directory of this user's only, is taken. Before, a directory of this
// user's writable by others was used.
func TestDeviceJournalDirRefused(t *testing.T) {
	dev, _ := fixture.LoopDevice(t, 1<<20, nil)
	for _, c := range []struct {
		name string
		make func(t *testing.T, d string)
	}{
		{"world-writable", func(t *testing.T, d string) { mkdirMode(t, d, 0o777) }},
		{"group-writable", func(t *testing.T, d string) { mkdirMode(t, d, 0o770) }},
		{"other-user", func(t *testing.T, d string) {
			mkdirMode(t, d, 0o700)
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", func(t *testing.T, d string) {
			real := filepath.Join(t.TempDir(), "elsewhere")
			mkdirMode(t, real, 0o700)
			if err := os.Symlink(real, d); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			xdg, home := t.TempDir(), t.TempDir()
			t.Setenv("XDG_CACHE_HOME", xdg)
			t.Setenv("HOME", home)
			bad := filepath.Join(xdg, "pbsdirect")
			c.make(t, bad)
			// A journal of this device is there already (planted).
			if j, err := filetarget.JournalPath(dev); err == nil {
				os.WriteFile(filepath.Join(bad, filepath.Base(j)), []byte("{}\n"), 0o600)
			}
			j, err := filetarget.JournalPath(dev)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(j, filepath.Join(home, ".cache", "pbsdirect")+"/") {
				t.Fatalf("journal at %s; want it under HOME, not in %s (%s)", j, bad, c.name)
			}
		})
	}
}

// mkdirMode makes directory d with exactly mode perm (umask aside).
func mkdirMode(t *testing.T, d string, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(d, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, perm); err != nil {
		t.Fatal(err)
	}
}
