package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
)

// drillReport is the JSON (or text) report of a disaster-recovery drill.
type drillReport struct {
	OK              bool            `json:"ok"`
	Error           string          `json:"error,omitempty"`
	Snapshot        string          `json:"snapshot,omitempty"`
	Archive         string          `json:"archive"`
	Target          string          `json:"target"`
	Started         string          `json:"started"`                           // RFC 3339, UTC
	RestoreSeconds  float64         `json:"time-to-restore-seconds,omitempty"` // store opened to synced target, less the time opening the key; absent when the restore failed
	ReadBackSeconds float64         `json:"read-back-seconds,omitempty"`       // re-check of every chunk from the target
	TotalSeconds    float64         `json:"total-seconds"`
	Restore         *restoreSummary `json:"restore,omitempty"`
	ReadBack        *readBackReport `json:"read-back,omitempty"`
	Removed         bool            `json:"target-removed,omitempty"`
	ExitCode        int             `json:"exit-code"` // the process exit code
}

// readBackReport says what the read-back checked.
type readBackReport struct {
	Bytes            uint64  `json:"bytes"`              // read from the target
	ChunksChecked    uint64  `json:"chunks-checked"`     // positions whose digest was recomputed
	ZeroBytesChecked uint64  `json:"zero-bytes-checked"` // zero ranges read and found zero
	HoleBytes        uint64  `json:"hole-bytes"`         // zero ranges that are holes of a sparse target
	MiBps            float64 `json:"mib-per-second"`
}

func cmdDrill(fs *flag.FlagSet) commandFunc {
	rc := registerRestoreFlags(fs)
	remove := fs.Bool("remove", false, "remove the restored target file after a successful drill (never a block device or a file that existed)")
	scratch := fs.String("scratch", "", "fleet drill: restore the newest snapshot of every group of --ns (or each pair of --list) into this directory, one copy per archive, removed after its drill passes")
	list := fs.String("list", "", "with --scratch: drill the SNAPSHOT ARCHIVE pairs of this file, one pair a line (# starts a comment)")
	parallel := fs.Int("parallel", 1, "with --scratch: archives drilled at once")
	metrics := fs.String("metrics-textfile", "", "write Prometheus metrics for the node_exporter textfile collector to this file (*.prom)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkOutputPath("--metrics-textfile", *metrics); err != nil {
			return err
		}
		if *scratch != "" || *list != "" {
			return drillFleet(ctx, fs, rc, *scratch, *list, *parallel, *metrics, stdout, stderr)
		}
		if fs.Changed("parallel") {
			return usagef("--parallel is for a fleet drill (--scratch)")
		}
		if err := rc.check(fs); err != nil {
			return err
		}
		archive, targetPath := index.NormalizeArchiveName(fs.Arg(1)), fs.Arg(2)
		rep, err := drillOne(ctx, rc, fs.Arg(0), archive, targetPath, *remove, stdout, stderr)
		if err != nil && codeFor(ctx, err) == exitUsage {
			// Refused as given (a usage error, a TARGET that exists…):
			// nothing was drilled, so no drill report.
			return err
		}
		rep.ExitCode = codeFor(ctx, err)
		if *metrics != "" {
			if merr := writeDrillMetrics(*metrics, []drillReport{rep}); merr != nil {
				return fmt.Errorf("--metrics-textfile: %w", merr)
			}
		}
		if rc.sf.json() {
			if werr := writeJSON(stdout, rep); werr != nil {
				return werr
			}
		} else {
			printDrill(stdout, rep)
		}
		if err != nil {
			return fmt.Errorf("drill failed: %w", err)
		}
		return nil
	}
}

// drillOne restores archive of snapshot ref to targetPath, reads it back
// re-checking every chunk and, with remove, removes a target it created
// after success. The report says what happened; the error is why it failed
// (a usage error: nothing was done).
func drillOne(ctx context.Context, rc *restoreCmd, ref, archive, targetPath string, remove bool, stdout, stderr io.Writer) (drillReport, error) {
	start := time.Now()
	rep := drillReport{Snapshot: ref, Archive: archive, Target: targetPath, Started: start.UTC().Format(time.RFC3339)}
	finish := func(err error) (drillReport, error) {
		rep.OK = err == nil
		if err != nil {
			rep.Error = err.Error()
		}
		var re *resolvedError
		if errors.As(err, &re) {
			rep.Snapshot = re.snap // TYPE/ID resolved to the snapshot drilled, also on failure
		}
		rep.TotalSeconds = time.Since(start).Seconds()
		return rep, err
	}
	r, err := rc.run(ctx, ref, archive, targetPath, false, stdout, stderr)
	if err != nil {
		return finish(err)
	}
	rep.RestoreSeconds = r.summary.Seconds // from the key opened: a KDF or a prompt is no restore time
	rep.Snapshot, rep.Restore = r.summary.Snapshot, &r.summary
	// The target stays open and locked until the read-back (and --remove)
	// are done: no other run can write it meanwhile.
	defer r.target.Close(false)

	rbStart := time.Now()
	var rb restore.ReadBackStats
	bar := startProgress(stderr, rc.sf.progress, "read back", int64(r.plan.Size), func() int64 {
		return int64(rb.Bytes.Load() + rb.HoleBytes.Load())
	})
	err = restore.ReadBackTarget(ctx, r.target, targetPath, r.plan, r.key, rc.pf.jobs+max(rc.pf.writers, 0), &rb)
	bar.done()
	el := time.Since(rbStart)
	rep.ReadBackSeconds = el.Seconds()
	rep.ReadBack = &readBackReport{
		Bytes: rb.Bytes.Load(), ChunksChecked: rb.Chunks.Load(), ZeroBytesChecked: rb.ZeroChecked.Load(),
		HoleBytes: rb.HoleBytes.Load(), MiBps: restore.MiBps(rb.Bytes.Load(), el),
	}
	if rm, ok := r.target.(restore.Remover); ok && err == nil && remove && r.created {
		if rerr := rm.Remove(); rerr != nil {
			err = rerr
		} else {
			rep.Removed = true
		}
	}
	return finish(err)
}

// printDrill prints the drill report as text; a failure's error is said
// once, on stderr (run prints it).
func printDrill(w io.Writer, r drillReport) {
	fmt.Fprintf(w, "drill %s/%s -> %s: %s\n", index.DisplayText(r.Snapshot), index.DisplayText(r.Archive), index.DisplayText(r.Target), okWord(r.OK))
	if r.Restore != nil {
		fmt.Fprintf(w, "  time to restore: %.2fs (%s, %.1f MiB/s; %d chunks fetched, %s of zero chunks skipped)\n",
			r.RestoreSeconds, humanBytes(r.Restore.Size), r.Restore.MiBps, r.Restore.ChunksFetched, humanBytes(r.Restore.ZeroBytes))
	}
	if r.ReadBack != nil {
		fmt.Fprintf(w, "  read back: %.2fs, %d chunk positions re-hashed, %s of zero ranges read as zeros, %s holes\n",
			r.ReadBackSeconds, r.ReadBack.ChunksChecked, humanBytes(r.ReadBack.ZeroBytesChecked), humanBytes(r.ReadBack.HoleBytes))
	}
	fmt.Fprintf(w, "  total: %.2fs\n", r.TotalSeconds)
}

// drillCommand is 'pbsdirect drill'.
func drillCommand() commandSpec {
	return commandSpec{
		use:   "drill [flags] SNAPSHOT ARCHIVE TARGET | --scratch DIR [--list FILE]",
		short: "disaster-recovery rehearsal: restore, read back, re-check, report",
		long: `Disaster-recovery rehearsal: restore an archive to TARGET, read the target back
and compare it with the snapshot, then report the time to restore and the
result (text, or one JSON object for monitoring). --remove deletes the
restored file after a successful drill.

SNAPSHOT, ARCHIVE and TARGET are as for restore.`,
		example: `  pbsdirect drill --store /mnt/ds vm/100 drive-scsi0 /var/tmp/drill.raw --remove
  pbsdirect drill --store s3://backups/pbs --output-format json vm/100 drive-scsi0 /var/tmp/drill.raw`,
		build:    cmdDrill,
		complete: completeSnapshotImage,
	}
}
