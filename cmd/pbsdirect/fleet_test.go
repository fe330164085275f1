package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

const fleetCS = 64 << 10

// fleet is a datastore with namespaces whose snapshots share chunks.
type fleet struct {
	store   string
	snaps   []index.Snapshot
	digests map[string][]crypto.Digest // by snapshot: drive-scsi0.img.fidx digests
}

// newFleet backs up, in the root namespace, prod and prod/db, images that
// all start with the same 4 chunks and end with 3 of their own.
func newFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{store: fixture.NewStore(t), digests: map[string][]crypto.Digest{}}
	dir := t.TempDir()
	common := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 4 * fleetCS})
	for i, s := range []struct{ ns, typ, id string }{
		{"", "vm", "100"}, {"", "vm", "100"}, {"", "ct", "200"}, {"prod", "vm", "100"}, {"prod/db", "vm", "300"},
	} {
		snap := fixture.Snap(t, s.ns, s.typ, s.id, fixture.T0+int64(i)*3600)
		f.add(t, dir, snap, common, uint64(10+i))
	}
	return f
}

// add backs up common plus 3 chunks of its own (seed) as snap.
func (f *fleet) add(t *testing.T, dir string, snap index.Snapshot, common []byte, seed uint64) {
	t.Helper()
	img := append(slices.Clone(common), fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: 3 * fleetCS})...)
	p := fixture.WriteFile(t, dir, fmt.Sprintf("%d.raw", seed), img)
	fixture.Backup(t, f.store, snap, backup.Options{ChunkSize: fleetCS}, backup.Source{Name: "drive-scsi0.img", Path: p})
	_, f.digests[snap.String()] = fixture.Digests(t, fixture.SnapPath(f.store, snap, "drive-scsi0.img.fidx"))
	f.snaps = append(f.snaps, snap)
}

// damage lists, per snapshot, "digest@offsets" for every chunk of bad.
func (f *fleet) damage(in func(index.Snapshot) bool, bad ...crypto.Digest) map[string][]string {
	out := map[string][]string{}
	for _, s := range f.snaps {
		if !in(s) {
			continue
		}
		for _, d := range bad {
			var offs []uint64
			for i, x := range f.digests[s.String()] {
				if x == d {
					offs = append(offs, uint64(i)*fleetCS)
				}
			}
			if offs != nil {
				out[s.String()] = append(out[s.String()], fmt.Sprintf("%s@%v", d, offs))
			}
		}
		slices.Sort(out[s.String()])
	}
	return out
}

// reportDamage lists, per snapshot of rep, "digest@offsets" of its damaged chunks.
func reportDamage(rep verify.Report) map[string][]string {
	out := map[string][]string{}
	for _, s := range rep.Snapshots {
		for _, a := range s.Archives {
			for _, d := range a.Damaged {
				out[s.Snapshot] = append(out[s.Snapshot], fmt.Sprintf("%s@%v", d.Digest, d.Offsets))
			}
		}
		slices.Sort(out[s.Snapshot])
	}
	return out
}

func verifyReport(t *testing.T, wantCode int, args ...string) verify.Report {
	t.Helper()
	r := pbs(t, append([]string{"verify", "--output-format", "json"}, args...)...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != wantCode {
		t.Fatalf("want exit %d and a report (%v): %v", wantCode, err, r)
	}
	return rep
}

// TestVerifyScopeDamage: two deleted chunks (one shared by every snapshot)
// and one corrupted are reported with exactly the snapshots and byte
// ranges they break, for the whole store and for each namespace scope.
func TestVerifyScopeDamage(t *testing.T) {
	f := newFleet(t)
	shared := f.digests[f.snaps[0].String()][1]
	gone := f.digests[f.snaps[4].String()][5]    // prod/db only
	flipped := f.digests[f.snaps[1].String()][6] // root vm/100, second snapshot
	remove(t, fixture.ChunkPath(f.store, shared))
	remove(t, fixture.ChunkPath(f.store, gone))
	fixture.FlipByte(t, fixture.ChunkPath(f.store, flipped), -1)
	nsIs := func(names ...string) func(index.Snapshot) bool {
		return func(s index.Snapshot) bool { return slices.Contains(names, s.NS.String()) }
	}
	for _, c := range []struct {
		name  string
		args  []string
		in    func(index.Snapshot) bool
		snaps int
	}{
		{"whole-store", []string{"--all-namespaces"}, nsIs("", "prod", "prod/db"), 5},
		{"root", nil, nsIs(""), 3},
		{"prod", []string{"--ns", "prod"}, nsIs("prod"), 1},
		{"prod-depth-1", []string{"--ns", "prod", "--max-depth", "1"}, nsIs("prod", "prod/db"), 2},
		{"root-depth-1", []string{"--max-depth", "1"}, nsIs("", "prod"), 4},
		{"group", []string{"vm/100"}, func(s index.Snapshot) bool { return s.NS.IsRoot() && s.ID == "100" }, 2},
		{"group-latest", []string{"vm/100", "--latest"}, func(s index.Snapshot) bool { return s.String() == f.snaps[1].String() }, 1},
		{"latest", []string{"--latest", "--all-namespaces"}, func(s index.Snapshot) bool { return s.String() != f.snaps[0].String() }, 4},
		{"sequential", []string{"--all-namespaces", "--parallel", "1"}, nsIs("", "prod", "prod/db"), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := verifyReport(t, 1, append([]string{"--store", f.store}, c.args...)...)
			want := f.damage(c.in, shared, gone, flipped)
			if got := reportDamage(rep); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("damage:\n got %v\nwant %v", got, want)
			}
			if len(rep.Snapshots) != c.snaps || rep.OK || rep.ExitCode != 1 {
				t.Errorf("%d snapshots (want %d), ok %v, exit code %d", len(rep.Snapshots), c.snaps, rep.OK, rep.ExitCode)
			}
			// Shared chunks are read once per run: the distinct chunks in scope.
			distinct := map[crypto.Digest]bool{}
			for _, s := range f.snaps {
				if c.in(s) {
					for _, d := range f.digests[s.String()] {
						distinct[d] = true
					}
				}
			}
			// Damaged chunks are not counted as checked.
			bad := 0
			for _, d := range []crypto.Digest{shared, gone, flipped} {
				if distinct[d] {
					bad++
				}
			}
			if rep.ChunksChecked != uint64(len(distinct)-bad) {
				t.Errorf("%d chunks checked, want the %d distinct good ones", rep.ChunksChecked, len(distinct)-bad)
			}
		})
	}
}

// normalize clears what differs between runs of the same verify.
func normalize(r verify.Report) verify.Report {
	r.Seconds, r.Started, r.Finished, r.Host = 0, "", "", ""
	return r
}

// TestVerifyShardsMerge: shards n = 1, 3 and 8, each its own process with
// JOB_COMPLETION_INDEX set as a Kubernetes Indexed Job sets it, together
// check every chunk once, and report merge of their reports equals the
// unsharded report.
func TestVerifyShardsMerge(t *testing.T) {
	f := newFleet(t)
	remove(t, fixture.ChunkPath(f.store, f.digests[f.snaps[0].String()][1]))
	remove(t, fixture.ChunkPath(f.store, f.digests[f.snaps[4].String()][5]))
	fixture.FlipByte(t, fixture.ChunkPath(f.store, f.digests[f.snaps[1].String()][6]), -1)
	dir := t.TempDir()
	whole := normalize(verifyReport(t, 1, "--store", f.store, "--all-namespaces", "--parallel", "1"))
	for _, n := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var files []string
			for i := range n {
				rp := filepath.Join(dir, fmt.Sprintf("shard-%d-of-%d.json", i, n))
				r := pbsProc(t, []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)},
					"verify", "--store", f.store, "--all-namespaces", "--parallel", "1", "--shard", fmt.Sprintf("auto/%d", n), "--report", rp)
				if r.code != 0 && r.code != 1 {
					t.Fatalf("shard %d/%d: %v", i, n, r.result)
				}
				var rep verify.Report
				b, err := os.ReadFile(rp)
				if err == nil {
					err = json.Unmarshal(b, &rep)
				}
				if err != nil || rep.Shard != fmt.Sprintf("%d/%d", i, n) && n > 1 {
					t.Fatalf("shard %d/%d report: %v %+v", i, n, err, rep)
				}
				if want := map[bool]int{true: 0, false: 1}[rep.OK]; r.code != want {
					t.Errorf("shard %d/%d: exit %d, report ok %v", i, n, r.code, rep.OK)
				}
				files = append(files, rp)
			}
			r := pbs(t, append([]string{"report", "merge", "--output-format", "json"}, files...)...)
			var merged verify.Report
			if err := json.Unmarshal([]byte(r.out), &merged); err != nil || r.code != 1 {
				t.Fatalf("report merge: %v: %v", err, r)
			}
			got, _ := json.MarshalIndent(normalize(merged), "", " ")
			want, _ := json.MarshalIndent(whole, "", " ")
			if string(got) != string(want) {
				t.Errorf("merged report differs from the unsharded one:\n%s\nwant\n%s", got, want)
			}
		})
	}
	// The same shard twice, or shards of different counts, are refused.
	mustFail(t, 2, []string{"twice"}, "report", "merge", filepath.Join(dir, "shard-0-of-3.json"), filepath.Join(dir, "shard-0-of-3.json"))
	mustFail(t, 2, []string{"not one of"}, "report", "merge", filepath.Join(dir, "shard-0-of-3.json"), filepath.Join(dir, "shard-1-of-8.json"))
	// A whole run's report among shards': named, and said not to be a shard's.
	mustFail(t, 2, []string{filepath.Join(dir, "shard-0-of-1.json") + ": not a shard report"},
		"report", "merge", filepath.Join(dir, "shard-0-of-3.json"), filepath.Join(dir, "shard-1-of-3.json"), filepath.Join(dir, "shard-0-of-1.json"))
	// Some shards missing: the rest is not checked, never ok.
	r := mustFail(t, 3, []string{"only shards 0,2/3 merged"}, "report", "merge", "--output-format", "json", filepath.Join(dir, "shard-0-of-3.json"), filepath.Join(dir, "shard-2-of-3.json"))
	if !strings.Contains(r.out, `"ok":false`) || strings.Contains(r.out+r.err, "store unavailable") {
		t.Errorf("an incomplete merge is reported ok, or as a store unavailable: %v", r)
	}
	// A shard file named that is not there, or not a report: exit 2,
	// naming the file.
	gone := filepath.Join(dir, "shard-1-of-3.missing.json")
	mustFail(t, 2, []string{gone}, "report", "merge", filepath.Join(dir, "shard-0-of-3.json"), gone, filepath.Join(dir, "shard-2-of-3.json"))
	notReport := filepath.Join(dir, "not-a-report.json")
	os.WriteFile(notReport, []byte("{{"), 0o644)
	mustFail(t, 2, []string{notReport, "not a verify report"}, "report", "merge", filepath.Join(dir, "shard-0-of-3.json"), notReport)
	// Last night's shard beside tonight's: refused.
	b, err := os.ReadFile(filepath.Join(dir, "shard-1-of-3.json"))
	if err != nil {
		t.Fatal(err)
	}
	var old verify.Report
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	old.Started = time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	b, _ = json.Marshal(old)
	stale := filepath.Join(dir, "stale-1-of-3.json")
	os.WriteFile(stale, b, 0o644)
	mustFail(t, 2, []string{"not a shard of the same run"}, "report", "merge", filepath.Join(dir, "shard-0-of-3.json"), stale, filepath.Join(dir, "shard-2-of-3.json"))
}

// TestShardSplit: the shard function splits digests evenly.
func TestShardSplit(t *testing.T) {
	f := newFleet(t)
	for _, bad := range []string{"3/3", "-1/3", "x/3", "1/0", "auto/3", "1"} {
		mustFail(t, 2, []string{"--shard"}, "verify", "--store", f.store, "--shard", bad)
	}
	t.Setenv("BATCH_TASK_INDEX", "2")
	r := mustOK(t, "verify", "--store", f.store, "--shard", "auto/3")
	if !strings.Contains(r.out, "(shard 2/3)") {
		t.Errorf("auto/3 with BATCH_TASK_INDEX=2: %s", r.out)
	}
}

// TestVerifyIncremental: with --state, a second run skips exactly the chunks
// verified within --reverify-after, checks those verified before it and a
// new snapshot's new chunks; a damaged or foreign state is ignored with a
// warning.
func TestVerifyIncremental(t *testing.T) {
	f := newFleet(t)
	state := filepath.Join(t.TempDir(), "state")
	args := []string{"--store", f.store, "--all-namespaces", "--state", state}
	distinct := map[crypto.Digest]bool{}
	for _, ds := range f.digests {
		for _, d := range ds {
			distinct[d] = true
		}
	}
	rep := verifyReport(t, 0, args...)
	if rep.ChunksChecked != uint64(len(distinct)) {
		t.Fatalf("first run: %d chunks checked, want %d", rep.ChunksChecked, len(distinct))
	}
	if rep = verifyReport(t, 0, args...); rep.ChunksChecked != 0 {
		t.Errorf("second run: %d chunks checked, want 0", rep.ChunksChecked)
	}
	// A new snapshot: only its 3 new chunks are read.
	common := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 4 * fleetCS})
	f.add(t, t.TempDir(), fixture.Snap(t, "prod", "vm", "100", fixture.T0+86400), common, 99)
	if rep = verifyReport(t, 0, args...); rep.ChunksChecked != 3 {
		t.Errorf("after a new snapshot: %d chunks checked, want 3", rep.ChunksChecked)
	}
	// Entries older than the window are checked again, exactly those.
	st := verify.NewState(f.store, 0)
	old := f.digests[f.snaps[0].String()]
	for i, d := range old {
		at := time.Now().Add(-time.Hour)
		if i < 2 {
			at = time.Now().Add(-31 * 24 * time.Hour)
		}
		st.Verified(d, fleetCS, false, at)
	}
	writeState(t, state, st)
	rep = verifyReport(t, 0, "--store", f.store, "--state", state, "--reverify-after", "30d", f.snaps[0].String())
	if a := rep.Snapshots[0].Archives[0]; rep.ChunksChecked != 2 || a.ChunksFresh != len(old)-2 {
		t.Errorf("old entries: %d checked, %+v; want 2 checked, %d fresh", rep.ChunksChecked, a, len(old)-2)
	}
	// --reverify-after 0 checks everything.
	if rep = verifyReport(t, 0, "--store", f.store, "--state", state, "--reverify-after", "0", f.snaps[0].String()); rep.ChunksChecked != uint64(len(old)) {
		t.Errorf("--reverify-after 0: %d chunks checked, want %d", rep.ChunksChecked, len(old))
	}
	// Damaged, foreign: warned about, not trusted.
	writeState(t, state, st)
	fixture.FlipByte(t, state, 60)
	foreign := filepath.Join(t.TempDir(), "foreign")
	writeState(t, foreign, func() *verify.State {
		s := verify.NewState("/some/other/store", 0)
		for _, d := range old {
			s.Verified(d, fleetCS, false, time.Now())
		}
		return s
	}())
	for _, p := range []string{state, foreign} {
		r := pbs(t, "verify", "--store", f.store, "--state", p, f.snaps[0].String())
		if r.code != 0 || !strings.Contains(r.err, "warning: --state") || !strings.Contains(r.out, fmt.Sprintf("%d chunks checked", len(old))) {
			t.Errorf("state %s: %v", p, r)
		}
	}
	// A chunk a run found damaged is checked again by the next run, even
	// within the window.
	os.Remove(state)
	verifyReport(t, 0, "--store", f.store, "--state", state, f.snaps[0].String())
	fixture.FlipByte(t, fixture.ChunkPath(f.store, old[1]), -1)
	verifyReport(t, 1, "--store", f.store, "--state", state, "--reverify-after", "0", f.snaps[0].String())
	if rep = verifyReport(t, 1, "--store", f.store, "--state", state, f.snaps[0].String()); rep.ChunksChecked != 0 || rep.DamagedChunks != 1 {
		t.Errorf("run after damage was found: %d checked, %d damaged; want the damaged chunk checked again", rep.ChunksChecked, rep.DamagedChunks)
	}
}

func writeState(t *testing.T, p string, st *verify.State) {
	t.Helper()
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteTo(fh, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyMetricsTextfile: --metrics-textfile writes metrics the
// Prometheus text parser reads, with the run's values; a failed run keeps
// the last success time of the run before it.
func TestVerifyMetricsTextfile(t *testing.T) {
	f := newFleet(t)
	prom := filepath.Join(t.TempDir(), "pbsdirect.prom")
	read := func() map[string]float64 {
		fh, err := os.Open(prom)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(fh)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for name, fam := range fams {
			m := fam.GetMetric()[0]
			out[name] = m.GetGauge().GetValue()
			for _, l := range m.GetLabel() {
				if l.GetName() == "store" && l.GetValue() != f.store {
					t.Errorf("%s: store label %q", name, l.GetValue())
				}
			}
		}
		return out
	}
	mustOK(t, "verify", "--store", f.store, "--all-namespaces", "--metrics-textfile", prom)
	m := read()
	if m["pbsdirect_verify_success"] != 1 || m["pbsdirect_verify_snapshots"] != 5 || m["pbsdirect_verify_chunks_checked"] == 0 || m["pbsdirect_verify_last_success_timestamp_seconds"] == 0 {
		t.Errorf("metrics after success: %v", m)
	}
	success := m["pbsdirect_verify_last_success_timestamp_seconds"]
	remove(t, fixture.ChunkPath(f.store, f.digests[f.snaps[0].String()][1]))
	pbs(t, "verify", "--store", f.store, "--all-namespaces", "--metrics-textfile", prom)
	m = read()
	if m["pbsdirect_verify_success"] != 0 || m["pbsdirect_verify_damaged_chunks"] != 5 || m["pbsdirect_verify_last_success_timestamp_seconds"] != success {
		t.Errorf("metrics after a failure: %v", m)
	}
}

// TestDrillFleet: a fleet drill of every group's newest snapshot restores
// each disk image into the scratch directory, prints a line per archive
// as it ends and a final table (text), or one JSON value with every
// drill's report (JSON), and leaves nothing behind; from a list, a damaged
// archive fails the run (exit 1) and is named, the others pass; the
// metrics textfile parses.
func TestDrillFleet(t *testing.T) {
	f := newFleet(t)
	scratch := t.TempDir()
	prom := filepath.Join(t.TempDir(), "drill.prom")
	r := mustOK(t, "drill", "--store", f.store, "--scratch", scratch, "--parallel", "2", "--metrics-textfile", prom)
	if strings.Count(r.out, ": ok, restored in ") != 2 || strings.Contains(r.out, "{") {
		t.Errorf("want a text line per archive, no JSON:\n%s", r.out)
	}
	reps := fleetJSON(t, 0, "--store", f.store, "--scratch", scratch, "--parallel", "2").Drills
	got := []string{}
	for _, d := range reps {
		if !d.OK || !d.Removed || d.ReadBack == nil || d.Restore == nil {
			t.Errorf("drill %+v", d)
		}
		got = append(got, d.Snapshot)
	}
	slices.Sort(got)
	if want := []string{f.snaps[2].String(), f.snaps[1].String()}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("drilled %v, want the newest of each root group %v", got, want)
	}
	if !strings.Contains(r.out, "time to restore") || !strings.Contains(r.out, "slowest:") {
		t.Errorf("no final table:\n%s", r.out)
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("scratch not empty: %v", left)
	}
	fh, err := os.Open(prom)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(fh)
	fh.Close()
	if err != nil || fams["pbsdirect_drill_archives"].GetMetric()[0].GetGauge().GetValue() != 2 || len(fams["pbsdirect_drill_time_to_restore_seconds"].GetMetric()) != 2 {
		t.Errorf("metrics: %v %v", err, fams)
	}

	// A killed drill's partial copy and journal (another scope: other
	// names) and its complete copies (a drill killed while it read one
	// back or booted it; among them the names this run gives its copies)
	// are removed with a note; one a running restore holds (its flock)
	// is kept, and so is a file that is not a drill's.
	stale := []string{".007-vm_100_2026-01-01T000000Z-drive-scsi0.img.pbsdirect-partial", ".007-vm_100_2026-01-01T000000Z-drive-scsi0.img.pbsdirect-journal"}
	for _, i := range []string{"000-", "001-"} {
		for _, s := range f.snaps[1:3] {
			stale = append(stale, strings.NewReplacer("/", "_", ":", "").Replace(i+s.String())+"-drive-scsi0.img")
		}
	}
	held := []string{".001-ct_9-root.img.pbsdirect-partial", "005-ct_9-root.img"}
	for _, n := range append(append(stale, held...), "keep.txt") {
		fixture.WriteFile(t, scratch, n, []byte("x"))
	}
	for _, n := range held {
		lk, err := os.Open(filepath.Join(scratch, n))
		if err != nil {
			t.Fatal(err)
		}
		defer lk.Close()
		if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
	}
	r = mustOK(t, "drill", "--store", f.store, "--scratch", scratch)
	if want := fmt.Sprintf("removed %d partial output(s) or journal(s)", len(stale)); !strings.Contains(r.err, want) {
		t.Errorf("no note of the stale files removed (%q): %v", want, r)
	}
	var left []string
	entries, _ := os.ReadDir(scratch)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if fmt.Sprint(left) != "[.001-ct_9-root.img.pbsdirect-partial 005-ct_9-root.img keep.txt]" {
		t.Errorf("scratch holds %v", left)
	}
	for _, n := range append(held, "keep.txt") {
		remove(t, filepath.Join(scratch, n))
	}

	// A copy's name another run holds: the target is busy (exit 3), not
	// the store unavailable.
	one := fixture.WriteFile(t, t.TempDir(), "one", []byte(f.snaps[3].String()+" drive-scsi0\n"))
	busy := filepath.Join(scratch, "."+strings.NewReplacer("/", "_", ":", "").Replace("000-"+f.snaps[3].String())+"-drive-scsi0.img.pbsdirect-partial")
	fixture.WriteFile(t, scratch, filepath.Base(busy), []byte("x"))
	lk, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	r = pbs(t, "drill", "--store", f.store, "--scratch", scratch, "--list", one)
	lk.Close()
	remove(t, busy)
	if r.code != 3 || strings.Contains(r.err, "store unavailable") || !strings.Contains(r.err, "target is in use") {
		t.Errorf("drill into a busy copy: %v", r)
	}

	// From a list, with one damaged archive.
	remove(t, fixture.ChunkPath(f.store, f.digests[f.snaps[4].String()][5]))
	list := fixture.WriteFile(t, t.TempDir(), "list", []byte("# drills\n"+
		f.snaps[3].String()+" drive-scsi0\n\n"+f.snaps[4].String()+" drive-scsi0.img.fidx\n"))
	r = pbs(t, "drill", "--store", f.store, "--scratch", scratch, "--list", list)
	if r.code != 1 || strings.Count(r.out, ": ok, restored in ") != 1 || strings.Count(r.out, ": FAILED: ") != 1 || !strings.Contains(r.err, f.snaps[4].String()) {
		t.Errorf("drill from a list with a damaged archive: %v", r)
	}
	if !strings.Contains(r.out, "slowest: "+f.snaps[3].String()) {
		t.Errorf("the slowest is not the archive that was restored:\n%s", r.out)
	}
	// Only failures: no slowest (not "slowest: … (0.00s)").
	only := fixture.WriteFile(t, t.TempDir(), "only", []byte(f.snaps[4].String()+" drive-scsi0\n"))
	if r := pbs(t, "drill", "--store", f.store, "--scratch", scratch, "--list", only); r.code != 1 || strings.Contains(r.out, "slowest") || regexp.MustCompile(`FAILED +0\.00s`).MatchString(r.out) {
		t.Errorf("a failed archive named the slowest, or given a time to restore:\n%s", r.out)
	}
	if rep := fleetJSON(t, 1, "--store", f.store, "--scratch", scratch, "--list", list); rep.Failed != 1 || len(rep.Drills) != 2 || rep.Drills[0].OK == rep.Drills[1].OK {
		t.Errorf("JSON of a drill from a list with a damaged archive: %+v", rep)
	}
	mustFail(t, 2, []string{"--list"}, "drill", "--store", f.store, "--scratch", scratch, "--list", fixture.WriteFile(t, t.TempDir(), "bad", []byte("vm/100\n")))
}

// TestOutputPathsCheckedFirst: a report, state or metrics file that cannot
// be written where it is named is a usage error found before any work.
func TestOutputPathsCheckedFirst(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"verify", "--store", f.store, "--state", filepath.Join(dir, "no", "state")},
		{"verify", "--store", f.store, "--report", dir},
		{"verify", "--store", f.store, "--metrics-textfile", filepath.Join(dir, "no", "m.prom")},
		{"drill", "--store", f.store, "--metrics-textfile", filepath.Join(dir, "no", "m.prom"), f.snaps[0].String(), "drive-scsi0", filepath.Join(dir, "d.img")},
	} {
		r := mustFail(t, 2, nil, args...)
		if !strings.Contains(r.err, "does not exist") && !strings.Contains(r.err, "is a directory") {
			t.Errorf("%v: %v", args, r)
		}
		if strings.Contains(r.out+r.err, "chunks checked") || strings.Contains(r.err, ".tmp") {
			t.Errorf("%v: worked before refusing, or names a temporary file: %v", args, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d.img")); err == nil {
		t.Error("drill restored before refusing its metrics file")
	}
	// Something at the path that is not a regular file (a FIFO, a link to
	// a device) would be replaced by the rename: refused, and left as is.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "null")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", "--store", f.store, "--report", fifo},
		{"verify", "--store", f.store, "--state", link},
		{"verify", "--store", f.store, "--metrics-textfile", link},
		{"verify", "--store", f.store, "--damaged-list", link},
		{"drill", "--store", f.store, "--scratch", t.TempDir(), "--list", fifo},
	} {
		r := mustFail(t, 2, []string{"not a regular file"}, args...)
		if strings.Contains(r.out+r.err, "chunks checked") {
			t.Errorf("%v: worked before refusing: %v", args, r)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st, err)
	}
}
