package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestConcurrentRestoresBusyFirst: a restore (or drill) to a target whose
// lock another run holds fails at once with exit 3 "target is in use",
// before its store is opened: here the store is not even there, and the
// error must be the busy target, not the store. Once the lock is given
// up, the same command gets as far as the store.
func TestConcurrentRestoresBusyFirst(t *testing.T) {
	nostore := filepath.Join(t.TempDir(), "nosuch-store")
	hold := func(t *testing.T, p string, create bool) func() {
		flags := os.O_RDWR
		if create {
			flags |= os.O_CREATE
		}
		f, err := os.OpenFile(p, flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		return func() { f.Close() }
	}
	for _, c := range []struct {
		name  string
		flags []string
		setup func(t *testing.T) (target string, release func())
	}{
		{"new-file", nil, func(t *testing.T) (string, func()) {
			target := filepath.Join(t.TempDir(), "disk.raw")
			return target, hold(t, filepath.Join(filepath.Dir(target), ".disk.raw.pbsdirect-partial"), true)
		}},
		{"new-file-resume", []string{"--resume"}, func(t *testing.T) (string, func()) {
			target := filepath.Join(t.TempDir(), "disk.raw")
			return target, hold(t, filepath.Join(filepath.Dir(target), ".disk.raw.pbsdirect-partial"), true)
		}},
		{"existing-file-force", []string{"--force"}, func(t *testing.T) (string, func()) {
			target := fixture.WriteFile(t, t.TempDir(), "disk.raw", []byte("an older image"))
			return target, hold(t, target, false)
		}},
		{"block-device", []string{"--force"}, func(t *testing.T) (string, func()) {
			dev, _ := fixture.LoopDevice(t, 1<<20, []byte{0xee})
			return dev, hold(t, dev, false)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			target, release := c.setup(t)
			for _, cmd := range []string{"restore", "drill"} {
				args := append(append([]string{cmd}, c.flags...), "--store", nostore, snap0, "drive-scsi0", target)
				if cmd == "drill" && c.name != "new-file" {
					continue
				}
				r := pbs(t, args...)
				if r.code != 3 || !strings.Contains(r.err, "target is in use") || strings.Contains(r.err, "nosuch-store") {
					t.Errorf("want exit 3 \"target is in use\" before the store is opened: %v", r)
				}
			}
			release()
			args := append(append([]string{"restore"}, c.flags...), "--store", nostore, snap0, "drive-scsi0", target)
			if r := pbs(t, args...); r.code != 3 || !strings.Contains(r.err, "nosuch-store") {
				t.Errorf("lock given up: want the store's error: %v", r)
			}
		})
	}
}
