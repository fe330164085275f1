// Package metrics makes the Prometheus metrics of a verify or drill run
// and delivers them: a textfile for node_exporter's textfile collector
// (replaced atomically, or the bytes for a bucket object) or a push to a
// Prometheus Pushgateway. The last-success times are carried over from
// the series the previous run left (Previous: the textfile, the object or
// the Pushgateway's group), so that a failed run keeps them.
//
// Series are labelled with the store as given and, per archive, its
// namespace ("" for the root), group (TYPE/ID, never the snapshot's time,
// so that every night's run updates the same series) and archive name.
package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/verify"
)

// ManifestArchive is the archive label of a snapshot that failed as a
// whole (its manifest could not be read or checked): no archive of it
// was verified.
const ManifestArchive = "index.json.blob"

// gauge registers a gauge named name with the constant labels and sets it.
func gauge(reg *prometheus.Registry, labels prometheus.Labels, name, help string, v float64) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
	reg.MustRegister(g)
	g.Set(v)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// archiveKey is the labels of one archive's series: its namespace, group
// and name.
type archiveKey struct{ namespace, group, archive string }

// keyOf returns the labels of archive of snapshot ref (TYPE/ID/TIME, with
// its namespace as index prints it). A ref that does not parse keeps its
// text as the group.
func keyOf(ref, archive string) archiveKey {
	s, err := index.ParseSnapshotRef(ref)
	if err != nil {
		return archiveKey{group: ref, archive: archive}
	}
	return archiveKey{namespace: s.NS.String(), group: s.Type + "/" + s.ID, archive: archive}
}

// archiveGauges are the per-archive gauges of a run, by archiveKey; an
// archive seen more than once (several snapshots of a group) is OK only
// when every time was.
type archiveGauges struct {
	keys  []archiveKey
	ok    map[archiveKey]bool
	extra map[archiveKey]float64 // summed
}

func newArchiveGauges() *archiveGauges {
	return &archiveGauges{ok: map[archiveKey]bool{}, extra: map[archiveKey]float64{}}
}

// add records one result of archive k.
func (a *archiveGauges) add(k archiveKey, ok bool, extra float64) {
	was, seen := a.ok[k]
	if !seen {
		a.keys = append(a.keys, k)
		was = true
	}
	a.ok[k] = was && ok
	a.extra[k] += extra
}

// register adds, for every archive, prefix+"_archive_success" and
// prefix+"_archive_last_success_timestamp_seconds" (now when it passed,
// else the previous run's value from prev), labelled with base's labels
// and the archive's; extraName, when set, is a gauge of the summed extra
// values.
func (a *archiveGauges) register(reg *prometheus.Registry, base prometheus.Labels, prefix, what string, now float64, prev Previous, extraName, extraHelp string) {
	names := []string{"namespace", "group", "archive"}
	for n := range base {
		names = append(names, n)
	}
	vec := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, names)
		reg.MustRegister(v)
		return v
	}
	okName, lastName := prefix+"_archive_success", prefix+"_archive_last_success_timestamp_seconds"
	okVec := vec(okName, "1 if the archive passed the last "+what+" run (every snapshot of its group in it), else 0.")
	lastVec := vec(lastName, "When the last "+what+" run in which the archive passed ended, Unix seconds (0: none yet).")
	var extraVec *prometheus.GaugeVec
	if extraName != "" {
		extraVec = vec(extraName, extraHelp)
	}
	for _, k := range a.keys {
		l := prometheus.Labels{"namespace": k.namespace, "group": k.group, "archive": k.archive}
		for n, v := range base {
			l[n] = v
		}
		last := prev.Value(lastName, l)
		if a.ok[k] {
			last = now
		}
		okVec.With(l).Set(boolFloat(a.ok[k]))
		lastVec.With(l).Set(last)
		if extraVec != nil {
			extraVec.With(l).Set(a.extra[k])
		}
	}
}

// Verify returns the metrics of the verify run rep, ended at now:
// pbsdirect_verify_* gauges labelled with the store and shard, and per
// archive (namespace, group, archive) whether it passed, its damaged
// chunks and when it last passed; retries is the number of bucket
// requests retried. The last-success times of a run that failed are
// prev's.
func Verify(rep verify.Report, retries int64, now time.Time, prev Previous) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	l := prometheus.Labels{"store": rep.Store, "shard": rep.Shard}
	end := float64(now.Unix())
	lastName := "pbsdirect_verify_last_success_timestamp_seconds"
	last := prev.Value(lastName, l)
	if rep.OK {
		last = end
	}
	gauge(reg, l, "pbsdirect_verify_last_run_timestamp_seconds", "When the last verify run ended, Unix seconds.", end)
	gauge(reg, l, lastName, "When the last verify run that found nothing damaged ended, Unix seconds (0: none yet).", last)
	gauge(reg, l, "pbsdirect_verify_success", "1 if the last verify run found nothing damaged, else 0.", boolFloat(rep.OK))
	gauge(reg, l, "pbsdirect_verify_duration_seconds", "Duration of the last verify run.", rep.Seconds)
	gauge(reg, l, "pbsdirect_verify_bytes", "Archive bytes covered by the last verify run.", float64(rep.Bytes))
	gauge(reg, l, "pbsdirect_verify_snapshots", "Snapshots checked by the last verify run.", float64(len(rep.Snapshots)))
	gauge(reg, l, "pbsdirect_verify_failed_snapshots", "Snapshots damaged or not verifiable in the last verify run.", float64(rep.Failed()))
	gauge(reg, l, "pbsdirect_verify_snapshots_without_key", "Snapshots of the last verify run that no key given opens (key missing or mismatched): not verified, not damaged; they are among the failed snapshots.", float64(rep.WithoutKey))
	gauge(reg, l, "pbsdirect_verify_chunks_checked", "Chunks read and checked by the last verify run.", float64(rep.ChunksChecked))
	gauge(reg, l, "pbsdirect_verify_damaged_chunks", "Damaged chunks found by the last verify run (per archive using them).", float64(rep.DamagedChunks))
	gauge(reg, l, "pbsdirect_verify_retries", "Bucket requests retried during the last verify run.", float64(retries))
	arch := newArchiveGauges()
	for _, s := range rep.Snapshots {
		if s.Skipped {
			continue // removed while running: not verified, no damage
		}
		if len(s.Archives) == 0 {
			arch.add(keyOf(s.Snapshot, ManifestArchive), s.OK, 0)
		}
		// Each archive passed or failed on its own; a snapshot that failed
		// with none of its archives failing failed as a whole (its
		// manifest, its key), and so did every archive of it.
		whole := !s.OK && !slices.ContainsFunc(s.Archives, func(a verify.ArchiveResult) bool { return !a.OK })
		for _, a := range s.Archives {
			arch.add(keyOf(s.Snapshot, a.Archive), a.OK && !whole, float64(a.DamagedCount))
		}
	}
	arch.register(reg, l, "pbsdirect_verify", "verify", end, prev,
		"pbsdirect_verify_archive_damaged_chunks", "Damaged chunks of the archive found by the last verify run (summed over the snapshots of its group in it).")
	return reg
}

// Drill is what the metrics say of one archive of a drill run.
type Drill struct {
	Snapshot, Archive string // the snapshot as index prints it (TYPE/ID/TIME, with its namespace)
	OK                bool
	// Restored says whether the restore got as far as a summary; Bytes,
	// Chunks, Retries and RestoreSeconds count only then.
	Restored       bool
	Bytes          uint64  // image bytes restored
	Chunks         uint64  // chunks fetched and verified
	Retries        int64   // bucket requests retried
	RestoreSeconds float64 // time to restore (manifest to synced target)
	// Booted, when set, says whether the archive's boot check (drill
	// --boot) passed; nil: it was not booted (no --boot, not its
	// snapshot's boot disk, or the drill failed before).
	Booted *bool
}

// Drills returns the metrics of a drill run of store (one archive or a
// fleet) that took seconds and ended at now: pbsdirect_drill_* gauges
// labelled with the store, and per archive (namespace, group, archive)
// whether it passed, when it last passed, its time to restore and, when
// it was booted, whether it booted (pbsdirect_drill_boot_success). The
// last-success times of what failed are prev's.
func Drills(store string, runs []Drill, seconds float64, now time.Time, prev Previous) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	l := prometheus.Labels{"store": store}
	end := float64(now.Unix())
	ok := true
	var failed, bytes, chunks, retries float64
	arch := newArchiveGauges()
	ttr := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pbsdirect_drill_time_to_restore_seconds",
		Help:        "Time to restore the archive in the last drill run (manifest to synced target); absent when its restore did not complete.",
		ConstLabels: l}, []string{"namespace", "group", "archive"})
	boot := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pbsdirect_drill_boot_success",
		Help:        "1 if the restored archive booted in the last drill run (--boot), else 0; absent when it was not booted.",
		ConstLabels: l}, []string{"namespace", "group", "archive"})
	booted := false
	for _, r := range runs {
		k := keyOf(r.Snapshot, r.Archive)
		arch.add(k, r.OK, 0)
		if !r.OK {
			ok = false
			failed++
		}
		if r.Restored {
			bytes += float64(r.Bytes)
			chunks += float64(r.Chunks)
			retries += float64(r.Retries)
			ttr.WithLabelValues(k.namespace, k.group, k.archive).Set(r.RestoreSeconds)
		}
		if r.Booted != nil {
			boot.WithLabelValues(k.namespace, k.group, k.archive).Set(boolFloat(*r.Booted))
			booted = true
		}
	}
	lastName := "pbsdirect_drill_last_success_timestamp_seconds"
	last := prev.Value(lastName, l)
	if ok {
		last = end
	}
	gauge(reg, l, "pbsdirect_drill_last_run_timestamp_seconds", "When the last drill run ended, Unix seconds.", end)
	gauge(reg, l, lastName, "When the last drill run in which every archive passed ended, Unix seconds (0: none yet).", last)
	gauge(reg, l, "pbsdirect_drill_success", "1 if every archive of the last drill run passed, else 0.", boolFloat(ok))
	gauge(reg, l, "pbsdirect_drill_duration_seconds", "Duration of the last drill run, every archive of it.", seconds)
	gauge(reg, l, "pbsdirect_drill_archives", "Archives drilled in the last run.", float64(len(runs)))
	gauge(reg, l, "pbsdirect_drill_failed_archives", "Archives whose drill failed in the last run.", failed)
	gauge(reg, l, "pbsdirect_drill_bytes", "Image bytes restored in the last drill run.", bytes)
	gauge(reg, l, "pbsdirect_drill_chunks", "Chunks fetched and verified in the last drill run.", chunks)
	gauge(reg, l, "pbsdirect_drill_retries", "Bucket requests retried during the last drill run.", retries)
	reg.MustRegister(ttr)
	if booted {
		reg.MustRegister(boot)
	}
	arch.register(reg, l, "pbsdirect_drill", "drill", end, prev, "", "")
	return reg
}
