package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/repair"
)

// TestRepairNoFreeBadName: a damaged chunk whose .0.bad to .9.bad names
// are all taken is not replaced (no .bad copy is ever overwritten): its
// item fails naming the cause, exit 3, the copies left as they were; the
// store's other chunks are repaired all the same.
func TestRepairNoFreeBadName(t *testing.T) {
	c := newRepairCase(t, filepath.Join(t.TempDir(), "primary"))
	full := c.damaged[0]
	dir := filepath.Dir(chunkFile(c.primary, full))
	for n := range chunkstore.MaxBadGenerations {
		if err := os.WriteFile(filepath.Join(dir, chunkstore.BadName(full, n)), []byte(fmt.Sprintf("copy %d", n)), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	rep := repairJSON(t, 3, "--store", c.primary, "--from", c.mirror1, "--from", c.mirror2)
	for _, it := range rep.Items {
		if it.Digest != full.String() {
			if it.Action != repair.ActionCopied {
				t.Errorf("item %+v: want copied", it)
			}
			continue
		}
		if it.Action != repair.ActionFailed || !strings.Contains(it.WriteError, "no free .bad name") || it.Aside != "" {
			t.Errorf("item %+v: want failed, no free .bad name", it)
		}
	}
	if rep.Failed != 1 || rep.Repaired != len(c.bad())-1 {
		t.Errorf("counts %+v: want 1 failed, the others repaired", rep.Counts)
	}
	for n := range chunkstore.MaxBadGenerations {
		p := filepath.Join(dir, chunkstore.BadName(full, n))
		if got, err := os.ReadFile(p); err != nil || string(got) != fmt.Sprintf("copy %d", n) {
			t.Errorf("%s: %q, %v; want it left as it was", p, got, err)
		}
	}
}

// TestRepairFromIsPrimary: --from naming the --store through another
// spelling (a trailing "/./", a relative path) or a symbolic link to it is
// refused as the exact path is: exit 2, nothing read or written.
func TestRepairFromIsPrimary(t *testing.T) {
	c := newRepairCase(t, filepath.Join(t.TempDir(), "primary"))
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(c.primary, link); err != nil {
		t.Fatal(err)
	}
	before := treeSum(t, c.primary)
	t.Chdir(filepath.Dir(c.primary))
	for _, from := range []string{c.primary, c.primary + "/./", "./" + filepath.Base(c.primary) + "/", link} {
		r := pbs(t, "repair", "--store", c.primary, "--from", from)
		if r.code != 2 || !strings.Contains(r.err, "is the --store being repaired") {
			t.Errorf("--from %s: %v; want exit 2, the primary named", from, r)
		}
	}
	if treeSum(t, c.primary) != before {
		t.Errorf("the primary changed")
	}
}

// readOnlyStore returns a read-only view of the datastore dir: a read-only
// bind mount as root (permissions do not stop root), else dir with its
// .chunks directory made read-only.
func readOnlyStore(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		chunks := filepath.Join(dir, ".chunks")
		if err := os.Chmod(chunks, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(chunks, 0o755) })
		return dir
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("no bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("no read-only remount: %v", err)
	}
	return ro
}

// TestRepairReadOnlyPrimary: a primary directory that cannot be written
// is found before the scope is read: exit 3 naming the store, no chunk
// checked or reported; --dry-run still works.
func TestRepairReadOnlyPrimary(t *testing.T) {
	c := newRepairCase(t, filepath.Join(t.TempDir(), "primary"))
	ro := readOnlyStore(t, c.primary)
	r := pbs(t, "repair", "--store", ro, "--from", c.mirror1, "--from", c.mirror2)
	if r.code != 3 || !strings.Contains(r.err, "cannot be written") || strings.Contains(r.out, "repair: chunk") {
		t.Errorf("%v; want exit 3 before any chunk is checked", r)
	}
	rep := repairJSON(t, 3, "--store", ro, "--from", c.mirror1)
	if rep.Chunks != 0 || len(rep.Items) != 0 {
		t.Errorf("report %+v; want nothing checked", rep)
	}
	if rep := repairJSON(t, 0, "--store", ro, "--from", c.mirror1, "--from", c.mirror2, "--dry-run"); rep.Would != len(c.bad()) {
		t.Errorf("dry run: counts %+v", rep.Counts)
	}
}
