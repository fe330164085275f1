package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
