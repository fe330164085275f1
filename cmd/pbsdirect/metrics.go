package main

import (
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/metrics"
	"github.com/pbsdirect/pbsdirect/verify"
)

// writeVerifyMetrics writes a verify run's metrics to path
// (metrics.WriteVerify), with the requests store retried.
func writeVerifyMetrics(path string, rep verify.Report, store chunkstore.Store) error {
	return metrics.WriteVerify(path, rep, backends.RetriesOf(store), time.Now())
}

// writeDrillMetrics writes the metrics of a drill run (one archive or a
// fleet) to path (metrics.WriteDrill).
func writeDrillMetrics(path string, reps []drill.Report) error {
	runs := make([]metrics.Drill, len(reps))
	for i, r := range reps {
		runs[i] = metrics.Drill{Snapshot: r.Snapshot, Archive: r.Archive, OK: r.OK, RestoreSeconds: r.RestoreSeconds}
		if r.Restore != nil {
			runs[i].Restored, runs[i].Bytes, runs[i].Chunks, runs[i].Retries = true, r.Restore.Size, r.Restore.ChunksFetched, r.Restore.Retries
		}
	}
	return metrics.WriteDrill(path, runs, time.Now())
}
