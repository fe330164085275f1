package main

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/pxar"
)

// TestRestorePxarBusy: a DIR another run is extracting into (its lock
// held) is refused with exit 3 before anything is written; once free the
// same command succeeds. restore --help sends a stopped pxar extraction to
// --force, not --resume.
func TestRestorePxarBusy(t *testing.T) {
	store, snaps, _ := pxStore(t, func() *pxar.Node { return pxTree(0) })
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		args := []string{"restore", "--store", store, snaps[1].snap, "root.pxar", dir}
		if force {
			args = append(args, "--force")
		}
		mustFail(t, exitOutside, []string{"is being written by another pbsdirect run"}, args...)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("busy run wrote %d entries", len(ents))
	}
	unix.Flock(fd, unix.LOCK_UN)
	pxRestore(t, "--store", store, snaps[1].snap, "root.pxar", dir)

	help := mustOK(t, "restore", "--help").out
	if !strings.Contains(help, "run it again with --force") || strings.Contains(help, "A restore that stops") {
		t.Errorf("restore --help on a stopped pxar extraction:\n%s", help)
	}
}
