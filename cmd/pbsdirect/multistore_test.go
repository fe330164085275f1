package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestSeveralStoresListUnion: with several --store, listings are the union
// of the stores, not the first store's alone. Store A (first, a copy that
// lags) holds vm/100 at T0; store B holds vm/100 at T0 and T0+1d and
// vm/200. "latest" is B's newer snapshot, every command sees 3 snapshots,
// and the disagreement is said on stderr.
func TestSeveralStoresListUnion(t *testing.T) {
	old, newer := fixture.Mixed(256<<10, 1), fixture.Mixed(256<<10, 2)
	a, b := fixture.NewStore(t), fixture.NewStore(t)
	put := func(store string, id string, epoch int64, data []byte) {
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
		fixture.Backup(t, store, fixture.Snap(t, "", "vm", id, epoch), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	put(a, "100", fixture.T0, old)
	put(b, "100", fixture.T0, old)
	put(b, "100", fixture.T0+86400, newer)
	put(b, "200", fixture.T0+86400, newer)
	stores := []string{"--store", a, "--store", b}
	args := func(cmd string, more ...string) []string { return append(append([]string{cmd}, stores...), more...) }

	r := mustOK(t, args("snapshots", "--output-format", "json")...)
	var list []snapshotEntry
	if err := json.Unmarshal([]byte(r.out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Errorf("snapshots lists %d of 3: %s", len(list), r.out)
	}
	if !strings.Contains(r.err, "disagree") || !strings.Contains(r.err, a) {
		t.Errorf("no warning that the stores disagree: %v", r)
	}
	r = mustOK(t, args("groups", "--output-format", "json")...)
	var groups []groupEntry
	if err := json.Unmarshal([]byte(r.out), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].Count != 2 {
		t.Errorf("groups: %s, want vm/100 with 2 snapshots and vm/200", r.out)
	}

	target := filepath.Join(t.TempDir(), "latest.raw")
	s := restoreJSON(t, append(stores, "vm/100", "drive-scsi0", target)...)
	fixture.Equal(t, target, newer)
	if want := fixture.Snap(t, "", "vm", "100", fixture.T0+86400).String(); s.Snapshot != want {
		t.Errorf("latest restored as %s, want %s", s.Snapshot, want)
	}

	r = mustOK(t, args("verify", "--output-format", "json")...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Snapshots) != 3 {
		t.Errorf("verify checked %d of 3 snapshots: %s", len(rep.Snapshots), r.out)
	}
}
