package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestSeveralStoresDisagreeSummary: what a store of several lacks is said
// once per store and run, summarised (how many snapshots, the first
// named), and only about what the command looked at: restoring vm/700,
// which both stores hold, says nothing about vm/100, which only the first
// holds.
func TestSeveralStoresDisagreeSummary(t *testing.T) {
	data := fixture.Mixed(64<<10, 1)
	a, b := fixture.NewStore(t), fixture.NewStore(t)
	put := func(store, id string, epoch int64) {
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
		fixture.Backup(t, store, fixture.Snap(t, "", "vm", id, epoch), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	put(a, "100", fixture.T0)
	put(a, "100", fixture.T0+86400)
	put(a, "700", fixture.T0)
	put(b, "700", fixture.T0)

	r := mustOK(t, "restore", "--store", a, "--store", b, "vm/700", "drive-scsi0", filepath.Join(t.TempDir(), "out.raw"))
	if strings.Contains(r.err, "vm/100") || strings.Contains(r.err, "disagree") {
		t.Errorf("restore of vm/700 warns about other groups: %v", r)
	}
	r = mustOK(t, "snapshots", "--store", a, "--store", b)
	if n := strings.Count(r.err, "disagree"); n != 1 || !strings.Contains(r.err, "--store "+b+" lacks 2 snapshot(s) that --store "+a+" holds (vm/100/") {
		t.Errorf("want one summary saying %s lacks 2 snapshots, got %v", b, r)
	}
	r = mustOK(t, "verify", "--store", a, "--store", b)
	if n := strings.Count(r.err, "disagree"); n != 1 {
		t.Errorf("verify: %d disagreement warnings, want 1: %v", n, r)
	}
}

// TestSeveralStoresSameNameOtherContent: the same snapshot name with other
// content in two stores (another disk behind the name) is warned about
// when the snapshot is opened, naming both stores, the one used and how
// to use the other; copies that agree say nothing.
func TestSeveralStoresSameNameOtherContent(t *testing.T) {
	imgA, imgB := fixture.Mixed(64<<10, 1), fixture.Mixed(64<<10, 2)
	a, b, same := fixture.NewStore(t), fixture.NewStore(t), fixture.NewStore(t)
	put := func(store string, data []byte) {
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
		fixture.Backup(t, store, fixture.Snap(t, "", "vm", "100", fixture.T0), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	put(a, imgA)
	put(b, imgB)
	put(same, imgA)
	target := filepath.Join(t.TempDir(), "out.raw")
	r := mustOK(t, "restore", "--store", a, "--store", b, "vm/100", "drive-scsi0", target)
	fixture.Equal(t, target, imgA)
	if !strings.Contains(r.err, "different manifests") || !strings.Contains(r.err, "using --store "+a) || !strings.Contains(r.err, "give --store "+b+" first") {
		t.Errorf("no warning that the stores hold different vm/100: %v", r)
	}
	r = mustOK(t, "restore", "--store", a, "--store", same, "vm/100", "drive-scsi0", filepath.Join(t.TempDir(), "out2.raw"))
	if strings.Contains(r.err, "different manifests") {
		t.Errorf("copies that agree warned: %v", r)
	}
}
