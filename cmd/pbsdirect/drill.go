package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"fmt"
	"io"
	"time"

	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
)

func cmdDrill(fs *flag.FlagSet) commandFunc {
	rc := registerRestoreFlags(fs)
	remove := fs.Bool("remove", false, "remove the restored target file after a successful drill (never a block device or a file that existed)")
	scratch := fs.String("scratch", "", "fleet drill: restore the newest snapshot of every group of --ns (or each pair of --list) into this directory, one copy per archive, removed after its drill passes")
	list := fs.String("list", "", "with --scratch: drill the SNAPSHOT ARCHIVE pairs of this file, one pair a line (# starts a comment)")
	parallel := fs.Int("parallel", 1, "with --scratch: archives drilled at once")
	metrics := fs.String("metrics-textfile", "", "write Prometheus metrics for the node_exporter textfile collector to this file (*.prom)")
	dry := registerDryRunFlags(fs)
	rc.delta = registerDeltaFlags(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkOutputPath("--metrics-textfile", *metrics); err != nil {
			return err
		}
		if (*dry.dryRun || rc.delta.active()) && (*scratch != "" || *list != "") {
			return usagef("--dry-run, --base and --in-place are for one SNAPSHOT ARCHIVE TARGET, not a fleet drill")
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
		if handled, err := rc.dryRun(ctx, fs, dry, "drill", stdout, stderr); handled {
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
			if merr := writeDrillMetrics(*metrics, []drill.Report{rep}); merr != nil {
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

// drillOne drills archive of snapshot ref to targetPath (restore.Drill:
// restore, read back re-checking every chunk and, with remove, remove a
// target it created after success). The report says what happened; the
// error is why it failed (a usage error: nothing was done).
func drillOne(ctx context.Context, rc *restoreCmd, ref, archive, targetPath string, remove bool, stdout, stderr io.Writer) (drill.Report, error) {
	start := time.Now()
	rep := drill.NewReport(ref, archive, targetPath, start)
	r, err := rc.run(ctx, ref, archive, targetPath, &restore.DrillOptions{Jobs: rc.pf.jobs + max(rc.pf.writers, 0), Remove: remove,
		Progress: func(total int64, done func() int64) func() {
			return startProgress(stderr, rc.sf.progress, "read back", total, done).done
		}}, stdout, stderr)
	if r != nil {
		rep.Snapshot = r.snap // TYPE/ID resolved to the snapshot drilled, also on failure
		rep.Add(r.drill, r.took)
	}
	rep.Finish(err, start)
	return rep, err
}

// printDrill prints the drill report as text; a failure's error is said
// once, on stderr (run prints it).
func printDrill(w io.Writer, r drill.Report) {
	fmt.Fprintf(w, "drill %s/%s -> %s: %s\n", index.DisplayText(r.Snapshot), index.DisplayText(r.Archive), index.DisplayText(r.Target), okWord(r.OK))
	if r.Restore != nil {
		fmt.Fprintf(w, "  time to restore: %.2fs (%s, %.1f MiB/s; %d chunks fetched, %s of zero chunks skipped)\n",
			r.RestoreSeconds, humanBytes(r.Restore.Size), r.Restore.MiBps, r.Restore.ChunksFetched, humanBytes(r.Restore.ZeroBytes))
	}
	if r.ReadBack != nil {
		fmt.Fprintf(w, "  read back: %.2fs, %d chunk positions re-hashed, %s of zero ranges read as zeros, %s holes\n",
			r.ReadBackSeconds, r.ReadBack.ChunksChecked, humanBytes(r.ReadBack.ZeroBytesChecked), humanBytes(r.ReadBack.HoleBytes))
	}
	if r.Restore != nil {
		printSalvaged(w, *r.Restore)
	}
	if r.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", r.Warning)
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
