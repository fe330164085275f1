package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestListingFilters: 'snapshots GROUP' lists that group alone (as
// proxmox-backup-client snapshot list GROUP), with a namespace from --ns or
// the group's own ns/… prefix; a group without snapshots exits 1 as a
// restore of it does; 'groups --max-depth' lists the groups of the
// namespaces below --ns.
func TestListingFilters(t *testing.T) {
	store := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 1))
	for _, s := range []struct{ ns, id string }{{"", "100"}, {"", "110"}, {"prod", "110"}, {"prod/db", "7"}} {
		for _, at := range []int64{fixture.T0, fixture.T0 + 3600} {
			fixture.Backup(t, store, fixture.Snap(t, s.ns, "vm", s.id, at), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
		}
	}
	snaps := func(args ...string) []string {
		t.Helper()
		r := mustOK(t, append([]string{"snapshots", "--store", store, "--output-format", "json"}, args...)...)
		var entries []snapshotEntry
		if err := json.Unmarshal([]byte(r.out), &entries); err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Snapshot)
		}
		return names
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"vm/110"}, []string{"vm/110/2026-11-29T10:00:00Z", "vm/110/2026-11-29T11:00:00Z"}},
		{[]string{"--ns", "prod", "vm/110"}, []string{"ns/prod/vm/110/2026-11-29T10:00:00Z", "ns/prod/vm/110/2026-11-29T11:00:00Z"}},
		{[]string{"ns/prod/vm/110"}, []string{"ns/prod/vm/110/2026-11-29T10:00:00Z", "ns/prod/vm/110/2026-11-29T11:00:00Z"}},
	} {
		if got := snaps(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("snapshots %v: %v, want %v", tc.args, got, tc.want)
		}
	}
	mustFail(t, exitData, []string{"no such snapshot", "vm/120"}, "snapshots", "--store", store, "vm/120")
	mustFail(t, exitUsage, []string{"GROUP"}, "snapshots", "--store", store, "vm/110/2026-11-29T10:00:00Z")
	mustFail(t, exitUsage, nil, "snapshots", "--store", store, "vm/110", "vm/100")
	mustFail(t, exitUsage, []string{"--max-depth"}, "snapshots", "--store", store, "--max-depth", "1", "vm/110")
	mustFail(t, exitUsage, []string{"namespace"}, "snapshots", "--store", store, "--ns", "other", "ns/prod/vm/110")

	groups := func(args ...string) []string {
		t.Helper()
		r := mustOK(t, append([]string{"groups", "--store", store, "--output-format", "json"}, args...)...)
		var gs []groupEntry
		if err := json.Unmarshal([]byte(r.out), &gs); err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		var names []string
		for _, g := range gs {
			names = append(names, g.Group)
		}
		return names
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"vm/100", "vm/110"}},
		{[]string{"--max-depth", "1"}, []string{"vm/100", "vm/110", "ns/prod/vm/110"}},
		{[]string{"--max-depth", "-1"}, []string{"vm/100", "vm/110", "ns/prod/vm/110", "ns/prod/ns/db/vm/7"}},
		{[]string{"--ns", "prod", "--max-depth", "1"}, []string{"ns/prod/vm/110", "ns/prod/ns/db/vm/7"}},
	} {
		if got := groups(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("groups %v: %v, want %v", tc.args, got, tc.want)
		}
	}
}
