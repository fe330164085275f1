package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/metrics"
)

// treeFleet backs up a namespace tree: the root, prod, prod/db,
// prod/db/x, staging and dr/site (dr holds none of its own), one group
// each (prod's vm/100 twice: only its newer snapshot is the newest).
func treeFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{store: fixture.NewStore(t), digests: map[string][]crypto.Digest{}}
	dir := t.TempDir()
	common := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 4 * fleetCS})
	for i, s := range []struct{ ns, typ, id string }{
		{"", "vm", "900"}, {"prod", "vm", "100"}, {"prod", "vm", "100"}, {"prod/db", "vm", "200"}, {"prod/db/x", "ct", "300"}, {"staging", "vm", "500"}, {"dr/site", "vm", "600"},
	} {
		f.add(t, dir, fixture.Snap(t, s.ns, s.typ, s.id, fixture.T0+int64(i)*3600), common, uint64(20+i))
	}
	return f
}

// fleetJSON runs a fleet drill in JSON and returns its one JSON value.
func fleetJSON(t *testing.T, wantCode int, args ...string) drill.FleetReport {
	t.Helper()
	r := pbs(t, append([]string{"drill", "--output-format", "json"}, args...)...)
	var rep drill.FleetReport
	dec := json.NewDecoder(strings.NewReader(r.out))
	if err := dec.Decode(&rep); err != nil || dec.More() || r.code != wantCode {
		t.Fatalf("want exit %d and one JSON value (%v): %v", wantCode, err, r)
	}
	return rep
}

// drilled lists the snapshots of rep's drills that passed, sorted.
func drilled(t *testing.T, rep drill.FleetReport) []string {
	t.Helper()
	var out []string
	for _, d := range rep.Drills {
		if !d.OK || !d.Removed {
			t.Errorf("drill %+v", d)
		}
		out = append(out, d.Snapshot)
	}
	slices.Sort(out)
	return out
}

// TestDrillNamespaceTree: a fleet drill of --ns prod with --max-depth or
// of --all-namespaces drills the newest snapshot of every group in the
// namespaces below, as verify's scope selects them; a GROUP argument
// drills that group; what cannot go together is a usage error.
func TestDrillNamespaceTree(t *testing.T) {
	f := treeFleet(t)
	snap := func(i ...int) []string {
		var out []string
		for _, n := range i {
			out = append(out, f.snaps[n].String())
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"prod", []string{"--ns", "prod"}, snap(2)},
		{"prod-depth-1", []string{"--ns", "prod", "--max-depth", "1"}, snap(2, 3)},
		{"prod-tree", []string{"--ns", "prod", "--max-depth", "7"}, snap(2, 3, 4)},
		{"all", []string{"--all-namespaces", "--parallel", "3"}, snap(0, 2, 3, 4, 5, 6)},
		{"dr-tree", []string{"--ns", "dr", "--max-depth", "1"}, snap(6)},
		{"group", []string{"--ns", "prod/db", "vm/200"}, snap(3)},
		{"group-with-ns", []string{"ns/prod/vm/100"}, snap(2)},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := fleetJSON(t, 0, append([]string{"--store", f.store, "--scratch", t.TempDir()}, c.args...)...)
			if got := drilled(t, rep); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("drilled %v, want %v", got, c.want)
			}
			if rep.Archives != len(c.want) || rep.Failed != 0 {
				t.Errorf("totals %+v", rep.Totals)
			}
		})
	}
	scratch := t.TempDir()
	mustFail(t, 2, []string{"--all-namespaces drills the whole store"}, "drill", "--store", f.store, "--scratch", scratch, "--all-namespaces", "--ns", "prod")
	mustFail(t, 2, []string{"--all-namespaces verifies the whole store"}, "verify", "--store", f.store, "--all-namespaces", "--ns", "prod")
	for _, args := range [][]string{
		{"--all-namespaces", "--ns", "prod"},
		{"--all-namespaces", "--max-depth", "1"},
		{"--max-depth", "8"},
		{"--max-depth", "1", "vm/100"},
		{"--list", fixture.WriteFile(t, t.TempDir(), "list", []byte(f.snaps[0].String()+" drive-scsi0\n")), "--all-namespaces"},
		{"vm/100", "drive-scsi0"},
	} {
		mustFail(t, 2, nil, append([]string{"drill", "--store", f.store, "--scratch", scratch}, args...)...)
	}
	// A scratch directory inside the datastore is refused up front, for
	// the whole fleet drill (exit 2, nothing drilled), in text and JSON.
	inStore := filepath.Join(f.store, ".chunks")
	r := mustFail(t, 2, []string{"--scratch", "part of the datastore"}, "drill", "--store", f.store, "--ns", "prod", "--scratch", inStore)
	if strings.Contains(r.out, "drill ") {
		t.Errorf("drilled with a scratch directory in the datastore:\n%s", r.out)
	}
	if r := pbs(t, "drill", "--store", f.store, "--ns", "prod", "--scratch", inStore, "--output-format", "json"); r.code != 2 || strings.Contains(r.out, `"drills"`) {
		t.Errorf("JSON fleet drill into the datastore: %v", r)
	}
	// A namespace whose snapshots are all below it, or an empty one:
	// nothing to drill passes with a note (which says how to include its
	// children), as verify does, and writes the metrics of no archives;
	// a namespace that does not exist fails.
	prom := filepath.Join(t.TempDir(), "e.prom")
	r = mustOK(t, "drill", "--store", f.store, "--scratch", scratch, "--ns", "dr", "--metrics-textfile", prom)
	for _, w := range []string{"nothing to drill", "no snapshots in namespace dr", "--max-depth"} {
		if !strings.Contains(r.err, w) {
			t.Errorf("stderr lacks %q: %v", w, r)
		}
	}
	if b, err := os.ReadFile(prom); err != nil || !regexp.MustCompile(`\npbsdirect_drill_archives\{[^}]*\} 0\n`).Match(b) {
		t.Errorf("metrics of a drill of nothing (%v):\n%s", err, b)
	}
	if err := os.MkdirAll(filepath.Join(f.store, "ns", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if rep := fleetJSON(t, 0, "--store", f.store, "--scratch", scratch, "--ns", "empty", "--max-depth", "3"); rep.Archives != 0 || !strings.Contains(rep.Note, "no snapshots in namespace empty") {
		t.Errorf("JSON of a drill of an empty namespace: %+v", rep)
	}
	mustFail(t, 1, []string{"namespace"}, "drill", "--store", f.store, "--scratch", scratch, "--ns", "nosuch")
	// Not a fleet drill: the tree flags are refused.
	mustFail(t, 2, []string{"--max-depth"}, "drill", "--store", f.store, "--max-depth", "1", f.snaps[0].String(), "drive-scsi0", scratch+"/x.raw")
}

// snapshotTime matches a snapshot's time in a label.
var snapshotTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// pushed reads the Pushgateway's metrics (GET /metrics) of job and
// instance.
func pushed(t *testing.T, url, job, instance string) metrics.Previous {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := metrics.ParsePrevious(strings.NewReader(string(b)), map[string]string{"job": job, "instance": instance})
	if err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	return prev
}

// TestDrillMetricsPush: a drill of a namespace tree pushes its metrics to
// a real Pushgateway, grouped by job and instance, labelled with store,
// namespace, group and archive (never the snapshot's time); a run that
// fails keeps the last-success times of the run before it, read back from
// the Pushgateway. verify and report merge push theirs too.
func TestDrillMetricsPush(t *testing.T) {
	pg := testenv.StartPushgateway(t)
	f := treeFleet(t)
	args := []string{"--store", f.store, "--scratch", t.TempDir(), "--ns", "prod", "--max-depth", "2", "--metrics-push", pg.URL}
	fleetJSON(t, 0, args...)
	m := pushed(t, pg.URL, "pbsdirect_drill", f.store)
	archive := func(i int) map[string]string {
		s := f.snaps[i]
		return map[string]string{"store": f.store, "namespace": s.NS.String(), "group": s.Type + "/" + s.ID, "archive": "drive-scsi0.img.fidx"}
	}
	store := map[string]string{"store": f.store}
	last := m.Value("pbsdirect_drill_last_success_timestamp_seconds", store)
	if m.Value("pbsdirect_drill_duration_seconds", store) <= 0 {
		t.Errorf("no drill duration pushed")
	}
	if last == 0 || m.Value("pbsdirect_drill_success", store) != 1 || m.Value("pbsdirect_drill_archives", store) != 3 {
		t.Fatalf("after a good run: last success %v, success %v, archives %v", last, m.Value("pbsdirect_drill_success", store), m.Value("pbsdirect_drill_archives", store))
	}
	for _, i := range []int{2, 3, 4} {
		if m.Value("pbsdirect_drill_archive_success", archive(i)) != 1 || m.Value("pbsdirect_drill_archive_last_success_timestamp_seconds", archive(i)) != last ||
			m.Value("pbsdirect_drill_time_to_restore_seconds", archive(i)) == 0 {
			t.Errorf("archive %v: success %v, last success %v, time to restore %v", archive(i), m.Value("pbsdirect_drill_archive_success", archive(i)),
				m.Value("pbsdirect_drill_archive_last_success_timestamp_seconds", archive(i)), m.Value("pbsdirect_drill_time_to_restore_seconds", archive(i)))
		}
	}
	for name, ms := range m {
		for _, s := range ms {
			for _, l := range s.GetLabel() {
				if snapshotTime.MatchString(l.GetValue()) {
					t.Errorf("%s: label %s=%q names a snapshot", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	// prod/db's archive is damaged: the run fails, and the last-success
	// times (the run's, the archive's) stay those of the good run.
	remove(t, fixture.ChunkPath(f.store, f.digests[f.snaps[3].String()][5]))
	fleetJSON(t, 1, args...)
	m = pushed(t, pg.URL, "pbsdirect_drill", f.store)
	if got := m.Value("pbsdirect_drill_last_success_timestamp_seconds", store); got != last || m.Value("pbsdirect_drill_success", store) != 0 || m.Value("pbsdirect_drill_failed_archives", store) != 1 {
		t.Errorf("after a failed run: last success %v (want %v), success %v", got, last, m.Value("pbsdirect_drill_success", store))
	}
	if m.Value("pbsdirect_drill_archive_success", archive(3)) != 0 || m.Value("pbsdirect_drill_archive_last_success_timestamp_seconds", archive(3)) != last {
		t.Errorf("damaged archive: success %v, last success %v (want %v)", m.Value("pbsdirect_drill_archive_success", archive(3)), m.Value("pbsdirect_drill_archive_last_success_timestamp_seconds", archive(3)), last)
	}
	if m.Value("pbsdirect_drill_archive_success", archive(4)) != 1 || m.Value("pbsdirect_drill_archive_last_success_timestamp_seconds", archive(4)) < last {
		t.Errorf("good archive after the failed run: success %v, last success %v", m.Value("pbsdirect_drill_archive_success", archive(4)), m.Value("pbsdirect_drill_archive_last_success_timestamp_seconds", archive(4)))
	}

	// verify, and report merge of shards, push their metrics the same way.
	r := pbs(t, "verify", "--store", f.store, "--ns", "prod", "--max-depth", "2", "--metrics-push", pg.URL, "--metrics-instance", "nightly")
	if r.code != 1 {
		t.Fatalf("verify of the damaged tree: %v", r)
	}
	v := pushed(t, pg.URL, "pbsdirect_verify", "nightly")
	if v.Value("pbsdirect_verify_archive_damaged_chunks", map[string]string{"store": f.store, "namespace": "prod/db", "group": "vm/200"}) != 1 ||
		v.Value("pbsdirect_verify_archive_success", map[string]string{"store": f.store, "namespace": "prod/db/x", "group": "ct/300", "archive": "drive-scsi0.img.fidx"}) != 1 {
		t.Errorf("verify metrics: damaged %v", v.Value("pbsdirect_verify_archive_damaged_chunks", map[string]string{"namespace": "prod/db"}))
	}
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		p := fmt.Sprintf("%s/shard-%d.json", dir, i)
		pbs(t, "verify", "--store", f.store, "--all-namespaces", "--shard", fmt.Sprintf("%d/2", i), "--report", p)
		files = append(files, p)
	}
	// Each shard pushes to its own group (instance and shard).
	for i := range 2 {
		r := pbs(t, "verify", "--store", f.store, "--all-namespaces", "--shard", fmt.Sprintf("%d/2", i), "--metrics-push", pg.URL)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("shard %d: %v", i, r)
		}
	}
	shardsPushed := pushed(t, pg.URL, "pbsdirect_verify", f.store)
	for i := range 2 {
		if shardsPushed.Value("pbsdirect_verify_snapshots", map[string]string{"store": f.store, "shard": fmt.Sprintf("%d/2", i)}) != 7 {
			t.Errorf("shard %d/2 metrics: %d series", i, len(shardsPushed))
		}
	}
	r = pbs(t, append([]string{"report", "merge", "--metrics-push", pg.URL, "--metrics-instance", "merged"}, files...)...)
	if r.code != 1 {
		t.Fatalf("report merge: %v", r)
	}
	v = pushed(t, pg.URL, "pbsdirect_verify", "merged")
	if v.Value("pbsdirect_verify_snapshots", map[string]string{"store": f.store, "shard": ""}) != 7 || v.Value("pbsdirect_verify_success", nil) != 0 {
		t.Errorf("merged verify metrics: %v snapshots, success %v", v.Value("pbsdirect_verify_snapshots", nil), v.Value("pbsdirect_verify_success", nil))
	}
	// A Pushgateway that does not answer: exit 3, the drill's result said.
	r = pbs(t, "drill", "--store", f.store, "--scratch", t.TempDir(), "--ns", "prod", "--metrics-push", "http://127.0.0.1:1")
	if r.code != 3 || !strings.Contains(r.err, "--metrics-push") {
		t.Errorf("unreachable Pushgateway: %v", r)
	}
	mustFail(t, 2, []string{"--metrics-push"}, "drill", "--store", f.store, "--scratch", t.TempDir(), "--metrics-push", "pushgateway:9091")
}

// TestDrillReportsEveryBadChunk: a drill of an archive with bad chunks
// reports every one, with the digests and offsets verify reports, instead
// of stopping at the first (or, journaled, past restore.MaxDamagedGoingOn
// of them): three (two missing, one corrupted) and seventy; so does a
// fleet drill's report of that archive.
func TestDrillReportsEveryBadChunk(t *testing.T) {
	for _, c := range []struct {
		name   string
		chunks int
		bad    func(f *fleet, own []crypto.Digest)
	}{
		{"three", 3, func(f *fleet, own []crypto.Digest) {
			remove(t, fixture.ChunkPath(f.store, own[0]))
			fixture.FlipByte(t, fixture.ChunkPath(f.store, own[1]), -1)
			remove(t, fixture.ChunkPath(f.store, own[2]))
		}},
		{"seventy", 72, func(f *fleet, own []crypto.Digest) {
			for _, d := range own[:70] {
				remove(t, fixture.ChunkPath(f.store, d))
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fleet{store: fixture.NewStore(t), digests: map[string][]crypto.Digest{}}
			s := fixture.Snap(t, "prod/db", "vm", "300", fixture.T0)
			f.add(t, t.TempDir(), s, fixture.Build(7, fixture.Region{Kind: fixture.Random, Len: int64(c.chunks-3) * fleetCS}), 8)
			own := f.digests[s.String()]
			c.bad(f, own)
			checkDrillDamage(t, f, s.String(), own)
		})
	}
}

// checkDrillDamage drills snap of f, alone and in a fleet drill, and
// checks that both report the damaged chunks verify reports.
func checkDrillDamage(t *testing.T, f *fleet, snap string, own []crypto.Digest) {
	t.Helper()
	rep := verifyReport(t, 1, "--store", f.store, snap)
	var want []string
	for _, d := range rep.Snapshots[0].Archives[0].Damaged {
		want = append(want, fmt.Sprintf("%s@%v missing=%v", d.Digest, d.Offsets, d.Missing))
	}
	n := rep.DamagedChunks
	list := func(ds []drill.Report) []string {
		var out []string
		for _, d := range ds {
			if d.DamagedCount != n {
				t.Errorf("drill counts %d damaged chunks, want %d: %s", d.DamagedCount, n, d.Error)
			}
			for _, c := range d.Damaged {
				out = append(out, fmt.Sprintf("%s@%v missing=%v", c.Digest, c.Offsets, c.Missing))
			}
		}
		return out
	}
	r := pbs(t, "drill", "--store", f.store, "--output-format", "json", snap, "drive-scsi0", t.TempDir()+"/d.raw")
	var one drill.Report
	if err := json.Unmarshal([]byte(r.out), &one); err != nil || r.code != 1 || one.OK {
		t.Fatalf("drill of the damaged archive: %v: %v", err, r)
	}
	if got := list([]drill.Report{one}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("drill reports\n%v\nverify reports\n%v", got, want)
	}
	if !strings.Contains(one.Error, want[len(want)-1][:64]) {
		t.Errorf("the drill's error does not name the last damaged chunk: %s", one.Error)
	}
	fl := fleetJSON(t, 1, "--store", f.store, "--scratch", t.TempDir(), "--ns", "prod/db")
	if got := list(fl.Drills); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fleet drill reports\n%v\nverify reports\n%v", got, want)
	}
	// The fleet drill's text names every damaged chunk too, with its
	// first offset, as verify's does.
	text := pbs(t, "drill", "--store", f.store, "--scratch", t.TempDir(), "--ns", "prod/db")
	for _, d := range rep.Snapshots[0].Archives[0].Damaged {
		kind := "damaged"
		if d.Missing {
			kind = "missing"
		}
		if line := fmt.Sprintf("%s chunk %s at [%d,", kind, d.Digest, d.Offsets[0]); !strings.Contains(text.out, line) {
			t.Errorf("fleet drill text lacks %q:\n%s", line, text.out)
			break
		}
	}
}

// TestDrillMetricsNotDelivered: a Pushgateway that cannot be reached
// fails a drill (one archive, or a fleet) with exit 3 before anything is
// restored, whether or not the archive is damaged; a push URL with a
// query or fragment, or an empty --scratch, is a usage error.
func TestDrillMetricsNotDelivered(t *testing.T) {
	f := newFleet(t)
	snap := f.snaps[4].String()
	dir := t.TempDir()
	args := func(target string) []string {
		return []string{"drill", "--store", f.store, "--output-format", "json", "--metrics-push", "http://127.0.0.1:1", snap, "drive-scsi0", target}
	}
	for _, damaged := range []bool{false, true} {
		if damaged {
			remove(t, fixture.ChunkPath(f.store, f.digests[snap][5]))
		}
		r := pbs(t, args(filepath.Join(dir, "a.raw"))...)
		if r.code != 3 || strings.Contains(r.out, `"snapshot":"`+snap) || !strings.Contains(r.err, "--metrics-push") {
			t.Errorf("drill (damaged %v), Pushgateway unreachable: %v", damaged, r)
		}
		r = pbs(t, "drill", "--store", f.store, "--scratch", dir, "--ns", "prod", "--metrics-push", "http://127.0.0.1:1")
		if r.code != 3 || strings.Contains(r.out, "drill ") || !strings.Contains(r.err, "--metrics-push") {
			t.Errorf("fleet drill (damaged %v), Pushgateway unreachable: %v", damaged, r)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("restored with the Pushgateway unreachable: %v", left)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9091?x=1", "http://127.0.0.1:9091/#a"} {
		mustFail(t, 2, []string{"--metrics-push", "query or fragment"}, "drill", "--store", f.store, "--scratch", dir, "--metrics-push", u)
	}
	mustFail(t, 2, []string{"--scratch wants the directory"}, "drill", "--store", f.store, "--scratch", "")
}

// TestMetricsTextfileInBucket: --metrics-textfile s3://bucket/key writes
// the metrics as an object, and a failed run reads the last success time
// back from it.
func TestMetricsTextfileInBucket(t *testing.T) {
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "")
	f := newFleet(t)
	obj := "s3://bkt/metrics/drill.prom"
	args := []string{"drill", "--store", f.store, "--scratch", t.TempDir(), "--ns", "prod", "--max-depth", "1", "--s3-endpoint", s3.Endpoint, "--metrics-textfile", obj}
	read := func() metrics.Previous {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(s3.Root, "bkt", "metrics", "drill.prom"))
		if err != nil {
			t.Fatal(err)
		}
		prev, err := metrics.ParsePrevious(strings.NewReader(string(b)), nil)
		if err != nil {
			t.Fatalf("%v:\n%s", err, b)
		}
		return prev
	}
	mustOK(t, args...)
	m := read()
	store := map[string]string{"store": f.store}
	last := m.Value("pbsdirect_drill_last_success_timestamp_seconds", store)
	if last == 0 || m.Value("pbsdirect_drill_archives", store) != 2 {
		t.Fatalf("metrics object after a good run: last success %v, archives %v", last, m.Value("pbsdirect_drill_archives", store))
	}
	remove(t, fixture.ChunkPath(f.store, f.digests[f.snaps[4].String()][5]))
	if r := pbs(t, args...); r.code != 1 {
		t.Fatalf("drill of the damaged tree: %v", r)
	}
	m = read()
	if m.Value("pbsdirect_drill_success", store) != 0 || m.Value("pbsdirect_drill_last_success_timestamp_seconds", store) != last {
		t.Errorf("metrics object after a failed run: last success %v, want %v kept; success %v", m.Value("pbsdirect_drill_last_success_timestamp_seconds", store), last, m.Value("pbsdirect_drill_success", store))
	}
}

// TestDrillInterruptedKeepsMetrics: a drill interrupted by SIGINT or
// SIGTERM (exit 130, 143) leaves the metrics textfile as the previous run
// wrote it, and its report counts the archives it did not start as not
// run, not failed, in text and JSON.
func TestDrillInterruptedKeepsMetrics(t *testing.T) {
	f := newFleet(t)
	list := fixture.WriteFile(t, t.TempDir(), "list", []byte(f.snaps[1].String()+" drive-scsi0\n"+f.snaps[2].String()+" drive-scsi0\n"))
	prom := filepath.Join(t.TempDir(), "drill.prom")
	mustOK(t, "drill", "--store", f.store, "--scratch", t.TempDir(), "--list", list, "--metrics-textfile", prom)
	before, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		json bool
	}{{syscall.SIGINT, 130, false}, {syscall.SIGTERM, 143, true}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&cli.InterruptedError{Sig: c.sig})
		// One archive: the metrics stay as they were too.
		one := []string{"drill", "--store", f.store, "--metrics-textfile", prom, f.snaps[1].String(), "drive-scsi0", filepath.Join(t.TempDir(), "d.raw")}
		if code := run(ctx, one, io.Discard, io.Discard); code != c.code {
			t.Errorf("drill of one archive after %v: exit %d, want %d", c.sig, code, c.code)
		}
		if after, _ := os.ReadFile(prom); !bytes.Equal(after, before) {
			t.Errorf("after %v the drill of one archive rewrote the metrics textfile:\n%s", c.sig, after)
		}
		args := []string{"drill", "--store", f.store, "--scratch", t.TempDir(), "--list", list, "--metrics-textfile", prom}
		if c.json {
			args = append(args, "--output-format", "json")
		}
		var out, errb bytes.Buffer
		code := run(ctx, args, &out, &errb)
		r := result{code: code, out: out.String(), err: errb.String(), args: args}
		if code != c.code {
			t.Errorf("want exit %d: %v", c.code, r)
		}
		if after, _ := os.ReadFile(prom); !bytes.Equal(after, before) {
			t.Errorf("after %v the metrics textfile was rewritten:\n%s", c.sig, after)
		}
		if c.json {
			var rep drill.FleetReport
			if err := json.NewDecoder(strings.NewReader(r.out)).Decode(&rep); err != nil || rep.Failed != 0 || rep.NotRun != 2 || !rep.Drills[0].NotRun {
				t.Errorf("JSON of an interrupted fleet drill (%v): %+v", err, rep)
			}
			for _, d := range rep.Drills {
				if d.NotRun && d.ExitCode != c.code {
					t.Errorf("not run %s: exit-code %d, want the run's %d", d.Snapshot, d.ExitCode, c.code)
				}
			}
		} else if strings.Count(r.out, "not run") < 2 || !strings.Contains(r.out, "0 failed") {
			t.Errorf("text of an interrupted fleet drill: %v", r)
		}
	}
}

// TestDrillInterruptedMidway: a fleet drill interrupted while restoring
// its first archive (a slow bucket) exits 130, keeps the previous
// metrics textfile byte for byte, and reports that archive as
// interrupted and the next as not run, none failed.
func TestDrillInterruptedMidway(t *testing.T) {
	fixture.SkipIfShort(t)
	storeArgs, chunkGETs := slowBucket(t, fixture.Mixed(4<<20, 23))
	list := fixture.WriteFile(t, t.TempDir(), "list", []byte(snap0+" drive-scsi0\n"+snap0+" drive-scsi0\n"))
	prom := fixture.WriteFile(t, t.TempDir(), "drill.prom", []byte("pbsdirect_drill_last_success_timestamp_seconds{store=\"s3://bkt/ds\"} 5\n"))
	before, _ := os.ReadFile(prom)
	scratch := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	args := append([]string{"drill", "--output-format", "json", "--scratch", scratch, "--list", list, "--metrics-textfile", prom}, storeArgs...)
	done := make(chan struct{})
	var out, errb bytes.Buffer
	var code int
	go func() { defer close(done); code = run(ctx, args, &out, &errb) }()
	waitRestoring(t, scratch, chunkGETs, done)
	cancel(&cli.InterruptedError{Sig: syscall.SIGINT})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("still running 60 s after the interrupt")
	}
	r := result{code: code, out: out.String(), err: errb.String(), args: args}
	if code != 130 {
		t.Fatalf("want exit 130: %v", r)
	}
	if after, _ := os.ReadFile(prom); !bytes.Equal(after, before) {
		t.Errorf("the interrupted drill rewrote the metrics textfile:\n%s", after)
	}
	var rep drill.FleetReport
	if err := json.NewDecoder(strings.NewReader(r.out)).Decode(&rep); err != nil || len(rep.Drills) != 2 {
		t.Fatalf("JSON (%v): %v", err, r)
	}
	if rep.Failed != 0 || rep.Interrupted != 1 || rep.NotRun != 1 || !rep.Drills[1].NotRun || rep.Drills[0].ExitCode != 130 {
		t.Errorf("totals %+v; drills %+v", rep.Totals, rep.Drills)
	}
}
