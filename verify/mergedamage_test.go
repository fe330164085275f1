package verify_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/verify"
)

// TestMergeDamageAsData: merging shards' reports counts the damaged
// chunks of an archive again from the data (error-is-damage), also for
// reports written before that field (an error that is the summary of the
// archive's own count); any other error of an archive is kept, even one
// that reads like a damage summary of another count.
func TestMergeDamageAsData(t *testing.T) {
	const snap = "vm/100/2026-11-01T00:00:00Z"
	report := func(shard string, a verify.ArchiveResult) verify.Report {
		return verify.Report{Version: verify.ReportVersion, Store: "/ds", Shard: shard, Started: "2026-11-02T01:00:00Z",
			Snapshots: []verify.SnapshotResult{{Snapshot: snap, Archives: []verify.ArchiveResult{a}}}}
	}
	// A report as written before error-is-damage existed.
	var old verify.Report
	if err := json.Unmarshal([]byte(`{"version":1,"store":"/ds","shard":"1/2","started":"2026-11-02T01:00:00Z",
		"snapshots":[{"snapshot":"`+snap+`","ok":false,"archives":[{"archive":"d.fidx","ok":false,"error":"2 damaged chunk(s)","size":8,"damaged-count":2}]}]}`), &old); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		a, b      verify.Report
		wantError string
		wantFlag  bool
	}{
		{"both with the field",
			report("0/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8, Error: verify.DamageSummary(3), DamageError: true, DamagedCount: 3}),
			report("1/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8, Error: verify.DamageSummary(2), DamageError: true, DamagedCount: 2}),
			"5 damaged chunk(s)", true},
		{"an older report",
			report("0/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8, Error: verify.DamageSummary(3), DamageError: true, DamagedCount: 3}),
			old, "5 damaged chunk(s)", true},
		{"an older report first",
			old,
			report("0/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8, Error: verify.DamageSummary(3), DamageError: true, DamagedCount: 3}),
			"5 damaged chunk(s)", true},
		{"another error is kept",
			report("0/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8, Error: "index unreadable", DamagedCount: 0}),
			old, "index unreadable", false},
		{"a text like a summary is not one",
			report("0/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8, Error: verify.DamageSummary(7), DamagedCount: 1}),
			report("1/2", verify.ArchiveResult{Archive: "d.fidx", Size: 8}),
			"7 damaged chunk(s)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := verify.Merge([]verify.Report{c.a, c.b})
			if err != nil {
				t.Fatal(err)
			}
			a := m.Snapshots[0].Archives[0]
			if a.Error != c.wantError || a.DamageError != c.wantFlag || a.OK {
				t.Errorf("merged archive: error %q (damage %v), OK %v; want %q (damage %v), not OK", a.Error, a.DamageError, a.OK, c.wantError, c.wantFlag)
			}
		})
	}
}

// TestIncomplete: a merge of only some shards, of shards that saw other
// snapshots, or with a shard that could not check everything is
// incomplete; a merge of every shard is not.
func TestIncomplete(t *testing.T) {
	shard := func(s string, code int) verify.Report { return verify.Report{Shard: s, ExitCode: code} }
	for _, c := range []struct {
		name   string
		merged verify.Report
		shards []verify.Report
		want   string
	}{
		{"whole", verify.Report{}, []verify.Report{shard("0/2", 0), shard("1/2", 1)}, ""},
		{"some shards", verify.Report{Shard: "0/2"}, []verify.Report{shard("0/2", 0)}, "only shards 0/2 merged"},
		{"not seen by all", verify.Report{NotVerified: []string{"vm/1/x"}}, []verify.Report{shard("0/2", 0), shard("1/2", 0)}, "1 snapshot(s) seen by only some shards"},
		{"shard outside", verify.Report{}, []verify.Report{shard("0/2", 0), shard("1/2", 3)}, "shard 1/2 could not check everything (exit code 3)"},
	} {
		err := verify.Incomplete(c.merged, c.shards)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && !strings.Contains(got, c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
