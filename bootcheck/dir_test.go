package bootcheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/bootcheck"
)

// TestMakeDirRemovesStale: a private directory whose run died (killed
// -9: its lock free) goes at the next MakeDir; a live run's, and a
// directory without a lock file, stay; done removes the run's own.
func TestMakeDirRemovesStale(t *testing.T) {
	parent := t.TempDir()
	live, liveDone, err := bootcheck.MakeDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	// A run killed -9 while it held its directory: the lock is gone with
	// the process.
	cmd := exec.Command("sh", "-c", `d=$(mktemp -d "$0/pbsdirect-boot-XXXX") && touch "$d/disk0-scsi0.qcow2" && exec flock "$d/owner.lock" sh -c 'kill -9 $$'`, parent)
	cmd.Run()
	foreign := filepath.Join(parent, "pbsdirect-boot-nolock")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(parent, "pbsdirect-boot-*"))
	if len(before) != 3 {
		if _, err := exec.LookPath("flock"); err != nil {
			t.Skip("no flock(1)")
		}
		t.Fatalf("before: %v", before)
	}
	dir, done, err := bootcheck.MakeDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(parent, "pbsdirect-boot-*"))
	want := map[string]bool{live: true, foreign: true, dir: true}
	if len(after) != 3 {
		t.Fatalf("after: %v, want %v", after, want)
	}
	for _, d := range after {
		if !want[d] {
			t.Errorf("stale directory kept: %s", d)
		}
	}
	done()
	liveDone()
	for _, d := range []string{dir, live} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s: %v", d, err)
		}
	}
}
