// Package metrics writes the metrics of a verify or drill run for the
// node_exporter textfile collector (--metrics-textfile). Each run replaces
// the file atomically (prometheus.WriteToTextfile); the last-success time
// is carried over from the file a failed run replaces.
package metrics

import (
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/verify"
)

// gauge registers a gauge named name with the constant labels and sets it.
func gauge(reg *prometheus.Registry, labels prometheus.Labels, name, help string, v float64) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
	reg.MustRegister(g)
	g.Set(v)
}

// LastValue returns the value of the gauge name in the textfile at path
// (the previous run's), or 0 when there is none or the file cannot be read
// or parsed.
func LastValue(path, name string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		return 0
	}
	if fam := fams[name]; fam != nil && len(fam.GetMetric()) > 0 {
		return fam.GetMetric()[0].GetGauge().GetValue()
	}
	return 0
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// write writes the gauges of reg to path; a failure is outfile.WriteError's.
func write(path string, reg *prometheus.Registry) error {
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return outfile.WriteError(path, err)
	}
	return nil
}

// WriteVerify writes the metrics of the verify run rep, ended at now, to
// path: pbsdirect_verify_* gauges labelled with the store and shard;
// retries is the number of bucket requests retried.
func WriteVerify(path string, rep verify.Report, retries int64, now time.Time) error {
	reg := prometheus.NewRegistry()
	l := prometheus.Labels{"store": rep.Store, "shard": rep.Shard}
	end := float64(now.Unix())
	last := LastValue(path, "pbsdirect_verify_last_success_timestamp_seconds")
	if rep.OK {
		last = end
	}
	gauge(reg, l, "pbsdirect_verify_last_run_timestamp_seconds", "When the last verify run ended, Unix seconds.", end)
	gauge(reg, l, "pbsdirect_verify_last_success_timestamp_seconds", "When the last verify run that found nothing damaged ended, Unix seconds (0: none yet).", last)
	gauge(reg, l, "pbsdirect_verify_success", "1 if the last verify run found nothing damaged, else 0.", boolFloat(rep.OK))
	gauge(reg, l, "pbsdirect_verify_duration_seconds", "Duration of the last verify run.", rep.Seconds)
	gauge(reg, l, "pbsdirect_verify_bytes", "Archive bytes covered by the last verify run.", float64(rep.Bytes))
	gauge(reg, l, "pbsdirect_verify_snapshots", "Snapshots checked by the last verify run.", float64(len(rep.Snapshots)))
	gauge(reg, l, "pbsdirect_verify_failed_snapshots", "Snapshots damaged or not verifiable in the last verify run.", float64(rep.Failed()))
	gauge(reg, l, "pbsdirect_verify_snapshots_without_key", "Snapshots of the last verify run that no key given opens (key missing or mismatched): not verified, not damaged; they are among the failed snapshots.", float64(rep.WithoutKey))
	gauge(reg, l, "pbsdirect_verify_chunks_checked", "Chunks read and checked by the last verify run.", float64(rep.ChunksChecked))
	gauge(reg, l, "pbsdirect_verify_damaged_chunks", "Damaged chunks found by the last verify run (per archive using them).", float64(rep.DamagedChunks))
	gauge(reg, l, "pbsdirect_verify_retries", "Bucket requests retried during the last verify run.", float64(retries))
	return write(path, reg)
}

// Drill is what the metrics say of one archive of a drill run.
type Drill struct {
	Snapshot, Archive string
	OK                bool
	// Restored says whether the restore got as far as a summary; Bytes,
	// Chunks and Retries count only then.
	Restored       bool
	Bytes          uint64  // image bytes restored
	Chunks         uint64  // chunks fetched and verified
	Retries        int64   // bucket requests retried
	RestoreSeconds float64 // time to restore (manifest to synced target)
}

// WriteDrill writes the metrics of a drill run (one archive or a fleet),
// ended at now, to path: pbsdirect_drill_* gauges, and the time to restore
// of each archive labelled with its snapshot and archive.
func WriteDrill(path string, runs []Drill, now time.Time) error {
	reg := prometheus.NewRegistry()
	end := float64(now.Unix())
	ok := true
	var failed, bytes, chunks, retries float64
	for _, r := range runs {
		if !r.OK {
			ok = false
			failed++
		}
		if r.Restored {
			bytes += float64(r.Bytes)
			chunks += float64(r.Chunks)
			retries += float64(r.Retries)
		}
	}
	last := LastValue(path, "pbsdirect_drill_last_success_timestamp_seconds")
	if ok {
		last = end
	}
	gauge(reg, nil, "pbsdirect_drill_last_run_timestamp_seconds", "When the last drill run ended, Unix seconds.", end)
	gauge(reg, nil, "pbsdirect_drill_last_success_timestamp_seconds", "When the last drill run in which every archive passed ended, Unix seconds (0: none yet).", last)
	gauge(reg, nil, "pbsdirect_drill_success", "1 if every archive of the last drill run passed, else 0.", boolFloat(ok))
	gauge(reg, nil, "pbsdirect_drill_archives", "Archives drilled in the last run.", float64(len(runs)))
	gauge(reg, nil, "pbsdirect_drill_failed_archives", "Archives whose drill failed in the last run.", failed)
	gauge(reg, nil, "pbsdirect_drill_bytes", "Image bytes restored in the last drill run.", bytes)
	gauge(reg, nil, "pbsdirect_drill_chunks", "Chunks fetched and verified in the last drill run.", chunks)
	gauge(reg, nil, "pbsdirect_drill_retries", "Bucket requests retried during the last drill run.", retries)
	ttr := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pbsdirect_drill_time_to_restore_seconds", Help: "Time to restore each archive in the last drill run (manifest to synced target)."}, []string{"snapshot", "archive"})
	reg.MustRegister(ttr)
	for _, r := range runs {
		ttr.WithLabelValues(r.Snapshot, r.Archive).Set(r.RestoreSeconds)
	}
	return write(path, reg)
}
