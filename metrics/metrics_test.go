package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/verify"
)

// reparse writes the metrics of a run as a textfile and reads them back
// as the next run's Previous.
func reparse(t *testing.T, text []byte) Previous {
	t.Helper()
	prev, err := ParsePrevious(bytes.NewReader(text), nil)
	if err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	return prev
}

// TestLastSuccessCarried: a failed run keeps the last-success times (of
// the run and of each archive) of the run before it; a good run sets them
// to its own end. Series carry store, namespace, group and archive, never
// the snapshot's time.
func TestLastSuccessCarried(t *testing.T) {
	good := []Drill{
		{Snapshot: "ns/prod/ns/db/vm/100/2026-01-01T00:00:00Z", Archive: "drive-scsi0.img.fidx", OK: true, Restored: true, RestoreSeconds: 2},
		{Snapshot: "ct/200/2026-01-01T00:00:00Z", Archive: "root.img.fidx", OK: true, Restored: true, RestoreSeconds: 1},
	}
	b, err := Text(Drills("/ds", good, 7, time.Unix(1000, 0), nil))
	if err != nil {
		t.Fatal(err)
	}
	prev := reparse(t, b)
	for _, want := range []string{
		`pbsdirect_drill_archive_last_success_timestamp_seconds{archive="drive-scsi0.img.fidx",group="vm/100",namespace="prod/db",store="/ds"} 1000`,
		`pbsdirect_drill_time_to_restore_seconds{archive="root.img.fidx",group="ct/200",namespace="",store="/ds"} 1`,
		`pbsdirect_drill_last_success_timestamp_seconds{store="/ds"} 1000`,
		`pbsdirect_drill_duration_seconds{store="/ds"} 7`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "2026-01-01") {
		t.Errorf("a label carries the snapshot's time:\n%s", b)
	}
	// The next night: a newer snapshot of vm/100 fails, ct/200 passes.
	bad := []Drill{
		{Snapshot: "ns/prod/ns/db/vm/100/2026-01-02T00:00:00Z", Archive: "drive-scsi0.img.fidx"},
		{Snapshot: "ct/200/2026-01-02T00:00:00Z", Archive: "root.img.fidx", OK: true, Restored: true, RestoreSeconds: 1},
	}
	b, err = Text(Drills("/ds", bad, 7, time.Unix(2000, 0), prev))
	if err != nil {
		t.Fatal(err)
	}
	prev = reparse(t, b)
	vm := map[string]string{"store": "/ds", "namespace": "prod/db", "group": "vm/100", "archive": "drive-scsi0.img.fidx"}
	ct := map[string]string{"store": "/ds", "namespace": "", "group": "ct/200", "archive": "root.img.fidx"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"pbsdirect_drill_last_success_timestamp_seconds", map[string]string{"store": "/ds"}, 1000},
		{"pbsdirect_drill_success", nil, 0},
		{"pbsdirect_drill_archive_last_success_timestamp_seconds", vm, 1000},
		{"pbsdirect_drill_archive_success", vm, 0},
		{"pbsdirect_drill_archive_last_success_timestamp_seconds", ct, 2000},
		{"pbsdirect_drill_time_to_restore_seconds", vm, 0}, // absent: the restore did not complete
	} {
		if got := prev.Value(c.name, c.labels); got != c.want {
			t.Errorf("after a failed run: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Another store's series are not this one's.
	if got := prev.Value("pbsdirect_drill_last_success_timestamp_seconds", map[string]string{"store": "/other"}); got != 0 {
		t.Errorf("another store's last success: %v", got)
	}
}

// TestVerifyArchives: verify's metrics carry store and shard, and per
// archive its namespace, group and damaged chunks; several snapshots of a
// group make one series, failed when any of them is.
func TestVerifyArchives(t *testing.T) {
	rep := verify.Report{Store: "/ds", OK: false, Snapshots: []verify.SnapshotResult{
		{Snapshot: "ns/prod/vm/100/2026-01-01T00:00:00Z", OK: true, Archives: []verify.ArchiveResult{{Archive: "drive-scsi0.img.fidx", OK: true}}},
		{Snapshot: "ns/prod/vm/100/2026-01-02T00:00:00Z", Archives: []verify.ArchiveResult{{Archive: "drive-scsi0.img.fidx", DamagedCount: 3}}},
		{Snapshot: "vm/101/2026-01-02T00:00:00Z", Error: "manifest damaged"},
	}}
	b, err := Text(Verify(rep, 3, time.Unix(3000, 0), nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`pbsdirect_verify_retries{shard="",store="/ds"} 3`,
		`pbsdirect_verify_archive_damaged_chunks{archive="drive-scsi0.img.fidx",group="vm/100",namespace="prod",shard="",store="/ds"} 3`,
		`pbsdirect_verify_archive_success{archive="drive-scsi0.img.fidx",group="vm/100",namespace="prod",shard="",store="/ds"} 0`,
		`pbsdirect_verify_archive_success{archive="index.json.blob",group="vm/101",namespace="",shard="",store="/ds"} 0`,
		`pbsdirect_verify_last_success_timestamp_seconds{shard="",store="/ds"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s:\n%s", want, b)
		}
	}
	if n := strings.Count(string(b), "pbsdirect_verify_archive_success{"); n != 2 {
		t.Errorf("%d archive series, want 2 (one per group and archive):\n%s", n, b)
	}
}

// TestVerifyWithoutKey: snapshots no key opens have their own gauge, apart
// from the damaged chunks.
func TestVerifyWithoutKey(t *testing.T) {
	b, err := Text(Verify(verify.Report{Store: "/ds", WithoutKey: 2}, 0, time.Unix(3000, 0), nil))
	if err != nil {
		t.Fatal(err)
	}
	prev := reparse(t, b)
	if got := prev.Value("pbsdirect_verify_snapshots_without_key", nil); got != 2 {
		t.Errorf("snapshots without key: %v, want 2", got)
	}
	if got := prev.Value("pbsdirect_verify_damaged_chunks", nil); got != 0 {
		t.Errorf("damaged chunks: %v, want 0", got)
	}
}

// TestVerifyArchiveOwnResult: a clean disk of a snapshot whose other disk
// is damaged passed (success 1, last success now); a snapshot that failed
// as a whole with no archive failing fails every archive of it.
func TestVerifyArchiveOwnResult(t *testing.T) {
	rep := verify.Report{Store: "/ds", Snapshots: []verify.SnapshotResult{
		{Snapshot: "vm/100/2026-01-01T00:00:00Z", Archives: []verify.ArchiveResult{
			{Archive: "drive-scsi0.img.fidx", DamagedCount: 2},
			{Archive: "drive-scsi1.img.fidx", OK: true},
		}},
		{Snapshot: "vm/101/2026-01-01T00:00:00Z", Error: "manifest signature", Archives: []verify.ArchiveResult{
			{Archive: "drive-scsi0.img.fidx", OK: true},
		}},
	}}
	prev := Previous{}
	b, err := Text(Verify(rep, 0, time.Unix(4000, 0), prev))
	if err != nil {
		t.Fatal(err)
	}
	got := reparse(t, b)
	lab := func(group, archive string) map[string]string {
		return map[string]string{"store": "/ds", "namespace": "", "group": group, "archive": archive}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"pbsdirect_verify_archive_success", lab("vm/100", "drive-scsi0.img.fidx"), 0},
		{"pbsdirect_verify_archive_success", lab("vm/100", "drive-scsi1.img.fidx"), 1},
		{"pbsdirect_verify_archive_last_success_timestamp_seconds", lab("vm/100", "drive-scsi1.img.fidx"), 4000},
		{"pbsdirect_verify_archive_last_success_timestamp_seconds", lab("vm/100", "drive-scsi0.img.fidx"), 0},
		{"pbsdirect_verify_archive_success", lab("vm/101", "drive-scsi0.img.fidx"), 0},
	} {
		if v := got.Value(c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
}

// TestDrillBootSuccess: pbsdirect_drill_boot_success is 1 for an archive
// that booted, 0 for one that did not (its data may have passed), and
// absent for an archive not booted; a run without --boot has none.
func TestDrillBootSuccess(t *testing.T) {
	up, down := true, false
	runs := []Drill{
		{Snapshot: "vm/100/2026-01-01T00:00:00Z", Archive: "drive-scsi0.img.fidx", OK: true, Booted: &up},
		{Snapshot: "vm/100/2026-01-01T00:00:00Z", Archive: "drive-scsi1.img.fidx", OK: true},
		{Snapshot: "vm/101/2026-01-01T00:00:00Z", Archive: "drive-scsi0.img.fidx", Booted: &down},
	}
	b, err := Text(Drills("/ds", runs, 1, time.Unix(4000, 0), Previous{}))
	if err != nil {
		t.Fatal(err)
	}
	const name = "pbsdirect_drill_boot_success"
	if n := strings.Count(string(b), "\n"+name+"{"); n != 2 {
		t.Errorf("%d series of %s, want 2:\n%s", n, name, b)
	}
	got := reparse(t, b)
	lab := func(group, archive string) map[string]string {
		return map[string]string{"store": "/ds", "namespace": "", "group": group, "archive": archive}
	}
	if v := got.Value(name, lab("vm/100", "drive-scsi0.img.fidx")); v != 1 {
		t.Errorf("booted: %v", v)
	}
	if v := got.Value(name, lab("vm/101", "drive-scsi0.img.fidx")); v != 0 || !strings.Contains(string(b), name+`{archive="drive-scsi0.img.fidx",group="vm/101"`) {
		t.Errorf("did not boot: %v\n%s", v, b)
	}
	if b, err = Text(Drills("/ds", runs[1:2], 1, time.Unix(4000, 0), Previous{})); err != nil || strings.Contains(string(b), name) {
		t.Errorf("without a boot: %v\n%s", err, b)
	}
}
