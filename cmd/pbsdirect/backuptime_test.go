package main

import (
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBackupTimeOrder: like PBS, a backup's --backup-time must follow the
// last snapshot of its group (same namespace, type and ID): an earlier or
// equal time is refused (usage, exit 2) before anything is written, naming
// both, the group's last snapshot being the latest one, not the first;
// another group or namespace is independent.
func TestBackupTimeOrder(t *testing.T) {
	store := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", fixture.Mixed(200<<10, 7))
	backup := func(ns, id, btime string) result {
		args := []string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", id, "--backup-time", btime, "--chunk-size", "64"}
		if ns != "" {
			args = append(args, "--ns", ns)
		}
		return pbs(t, append(args, "drive-scsi0.img:"+img)...)
	}
	list := func(ns string) string {
		args := []string{"snapshots", "--store", store}
		if ns != "" {
			args = append(args, "--ns", ns)
		}
		return mustOK(t, args...).out
	}
	const t2, t1, t3 = "2026-11-29T12:00:00Z", "2026-11-29T11:00:00Z", "2026-11-29T13:00:00Z"
	if r := backup("", "100", t2); r.code != 0 {
		t.Fatalf("first backup: %v", r)
	}
	before := list("")
	if r := backup("", "100", t1); r.code != 2 || !strings.Contains(r.err, "--backup-time "+t1+" is not after the group's last snapshot vm/100/"+t2) {
		t.Errorf("--backup-time %s after vm/100/%s: want a refusal naming both: %v", t1, t2, r)
	}
	// The snapshot is already there: nothing on the command line is
	// wrong (exit 3, as README's table says), and it is named.
	if r := backup("", "100", t2); r.code != 3 || !strings.Contains(r.err, "snapshot vm/100/"+t2+" in ") || !strings.Contains(r.err, "already exists") {
		t.Errorf("--backup-time %s of vm/100/%s: want exit 3 \"snapshot … already exists\": %v", t2, t2, r)
	}
	if after := list(""); after != before {
		t.Errorf("a refused backup changed the snapshots:\nbefore %s\nafter  %s", before, after)
	}
	for _, c := range []struct{ ns, id, btime string }{
		{"", "101", t1},     // another group
		{"prod", "100", t1}, // the same group in another namespace
		{"", "100", t3},     // later
	} {
		if r := backup(c.ns, c.id, c.btime); r.code != 0 {
			t.Errorf("ns %q vm/%s at %s: %v", c.ns, c.id, c.btime, r)
		}
	}
	// vm/100 now has t2 and t3: the refusal names t3, the last.
	if r := backup("", "100", t1); r.code != 2 || !strings.Contains(r.err, "the group's last snapshot vm/100/"+t3+":") {
		t.Errorf("--backup-time %s with vm/100/%s and vm/100/%s: want exit 2 naming the last, %s: %v", t1, t2, t3, t3, r)
	}
	// Without --backup-time (now), a group whose last snapshot lies in the
	// future is refused too: the new one would not be its latest.
	const future = "2099-01-01T00:00:00Z"
	if r := backup("", "102", future); r.code != 0 {
		t.Fatalf("backup at %s: %v", future, r)
	}
	r := pbs(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "102", "--chunk-size", "64", "drive-scsi0.img:"+img)
	if r.code != 2 || !strings.Contains(r.err, "vm/102/"+future+" is in the future") {
		t.Errorf("backup now after vm/102/%s: want exit 2: %v", future, r)
	}
}
