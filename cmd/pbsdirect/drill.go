package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
)

func cmdDrill(fs *flag.FlagSet) commandFunc {
	rc := registerRestoreFlags(fs)
	remove := fs.Bool("remove", false, "remove the restored target file after a successful drill (never a block device or a file that existed)")
	scratch := fs.String("scratch", "", "fleet drill: restore the newest snapshot of every group of --ns (or each pair of --list) into this directory, one copy per archive, removed after its drill whatever the result")
	list := fs.String("list", "", "with --scratch: drill the SNAPSHOT ARCHIVE pairs of this file, one pair a line (# starts a comment)")
	parallel := fs.Int("parallel", 1, "with --scratch: archives drilled at once (1..64)")
	scope := registerScopeFlags(fs, "drill", "drills")
	var metrics metricsFlags
	metrics.register(fs, "drill")
	boot := fs.Bool("boot", false, "after the read-back, boot the restored disk in QEMU and check that the guest comes up (see boot-check; the --boot-* flags); a fleet drill boots each snapshot's boot disk")
	var bf bootFlags
	bf.register(fs)
	dry := registerDryRunFlags(fs)
	rc.delta = registerDeltaFlags(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := metrics.check(fs); err != nil {
			return err
		}
		if err := checkDrillBoot(fs, *boot, &bf); err != nil {
			return err
		}
		var bootWith *bootFlags
		if *boot {
			bootWith = &bf
		}
		if *dry.dryRun && *boot {
			return usagef("--dry-run fetches nothing, so there is nothing to --boot")
		}
		if (*dry.dryRun || rc.delta.active()) && (*scratch != "" || *list != "") {
			return usagef("--dry-run, --base and --in-place are for one SNAPSHOT ARCHIVE TARGET, not a fleet drill")
		}
		if fs.Changed("scratch") && *scratch == "" {
			return usagef("--scratch wants the directory the fleet drill restores its copies into, not an empty name")
		}
		if *scratch != "" || *list != "" {
			if *boot {
				if err := bf.checkTools(); err != nil {
					return err
				}
			}
			bf.bootDiskOnly = true
			return drillFleet(ctx, fs, rc, fleetOptions{scratch: *scratch, list: *list, parallel: *parallel, scope: scope, metrics: &metrics, boot: bootWith}, stdout, stderr)
		}
		if fs.Changed("parallel") {
			return usagef("--parallel is for a fleet drill (--scratch)")
		}
		if scope.changed(fs) {
			return usagef("--max-depth and --all-namespaces are for a fleet drill (--scratch)")
		}
		if err := rc.check(fs); err != nil {
			return err
		}
		if handled, err := rc.dryRun(ctx, fs, dry, "drill", stdout, stderr); handled {
			return err
		}
		if err := metrics.reach(ctx, &rc.sf, rc.sf.store); err != nil {
			return err
		}
		archive, targetPath := index.NormalizeArchiveName(fs.Arg(1)), fs.Arg(2)
		if *boot && !strings.HasSuffix(archive, ".fidx") {
			return usagef("--boot boots a disk image (.img.fidx); %s is not one", index.DisplayText(archive))
		}
		if *boot {
			// Before the restore, not after it.
			if err := bf.checkTools(); err != nil {
				return err
			}
		}
		when := keepTarget
		if *remove {
			when = removeAfterPass
		}
		rep, err := drillOne(ctx, rc, fs.Arg(0), archive, targetPath, when, bootWith, stdout, stderr)
		if err != nil && codeFor(ctx, err) == exitUsage {
			// Refused as given (a usage error, a TARGET that exists…):
			// nothing was drilled, so no drill report.
			return err
		}
		rep.ExitCode = codeFor(ctx, err)
		rep.RateLimit = rc.sf.rate.limiter.Report()
		// Metrics that could not be delivered fail the run after the
		// report is printed (exit 3), unless the drill failed. An
		// interrupted drill leaves the metrics as they were.
		var merr error
		if metrics.set() && ctx.Err() == nil {
			if merr = metrics.drillMetrics(ctx, &rc.sf, rc.sf.store, []drill.Report{rep}); merr != nil && err == nil {
				rep.ExitCode = codeFor(ctx, merr)
			}
		}
		if rc.sf.json() {
			if werr := writeJSON(stdout, rep); werr != nil {
				return werr
			}
		} else {
			printDrill(stdout, rep)
		}
		switch {
		case err != nil && merr != nil:
			return fmt.Errorf("drill failed: %w; and %v", err, merr)
		case err != nil:
			return fmt.Errorf("drill failed: %w", err)
		}
		return merr
	}
}

// removeWhen says when drillOne removes the target a drill created.
type removeWhen int

const (
	keepTarget      removeWhen = iota // never
	removeAfterPass                   // after a drill that passed (--remove)
	removeAlways                      // whatever the result (a fleet drill's copy)
)

// drillOne drills archive of snapshot ref to targetPath (restore.Drill:
// restore, read back re-checking every chunk and remove a target it
// created as remove says; with boot, boot the target after the
// read-back, bootFlags.bootRestored). The report says what happened; the
// error is why it failed (a usage error: nothing was done).
func drillOne(ctx context.Context, rc *restoreCmd, ref, archive, targetPath string, remove removeWhen, boot *bootFlags, stdout, stderr io.Writer) (drill.Report, error) {
	start := time.Now()
	rep := drill.NewReport(ref, archive, targetPath, start)
	opts := &restore.DrillOptions{Jobs: rc.pf.jobs + max(rc.pf.writers, 0), Remove: remove != keepTarget, RemoveOnFailure: remove == removeAlways,
		Progress: func(total int64, done func() int64) func() {
			return startProgress(stderr, rc.sf.progress, "read back", total, done).done
		}}
	if boot != nil {
		opts.AfterReadBack = boot.bootRestored(archive, &rep.Boot, stderr)
	}
	r, err := rc.run(ctx, ref, archive, targetPath, opts, stdout, stderr)
	if remove == removeAlways && errors.Is(err, restore.ErrTargetExists) {
		err = &scratchTakenError{err}
	}
	if r != nil {
		rep.Snapshot = r.snap // TYPE/ID resolved to the snapshot drilled, also on failure
		rep.Add(r.drill, r.took)
		rep.StoresLeftOut = r.leftOut
	}
	rep.Finish(err, start)
	return rep, err
}

// scratchTakenError is a fleet drill's refusal of a copy whose name a
// file that is no drill's copy (or that could not be removed) takes in
// --scratch: its message gives no --force advice (a fleet drill takes no
// --force). It unwraps to the refusal (restore.ErrTargetExists).
type scratchTakenError struct{ err error }

func (e *scratchTakenError) Error() string {
	return strings.Replace(e.err.Error(), restore.ErrTargetExists.Error(), "target exists and is not a copy an earlier drill left: move it out of --scratch", 1)
}

func (e *scratchTakenError) Unwrap() error { return e.err }

// printDrill prints the drill report as text; a failure's error is said
// once, on stderr (run prints it).
func printDrill(w io.Writer, r drill.Report) {
	word := okWord(r.OK)
	if r.Interrupted() {
		word = "interrupted" // neither passed nor failed
	}
	fmt.Fprintf(w, "drill %s/%s -> %s: %s\n", index.DisplayText(r.Snapshot), index.DisplayText(r.Archive), index.DisplayText(r.Target), word)
	if r.Restore != nil {
		fmt.Fprintf(w, "  time to restore: %.2fs (%s, %.1f MiB/s; %d chunks fetched, %s of zero chunks skipped)\n",
			r.RestoreSeconds, humanBytes(r.Restore.Size), r.Restore.MiBps, r.Restore.ChunksFetched, humanBytes(r.Restore.ZeroBytes))
		printConnections(w, r.Restore.Requests)
	}
	// Also for a drill that failed or was interrupted before its restore
	// summary.
	lim := r.RateLimit
	if lim == nil && r.Restore != nil {
		lim = r.Restore.RateLimit
	}
	writeLimitLine(w, "  ", lim)
	if r.ReadBack != nil {
		fmt.Fprintf(w, "  read back: %.2fs, %d chunk positions re-hashed, %s of zero ranges read as zeros, %s holes\n",
			r.ReadBackSeconds, r.ReadBack.ChunksChecked, humanBytes(r.ReadBack.ZeroBytesChecked), humanBytes(r.ReadBack.HoleBytes))
	}
	if r.Restore != nil {
		printSalvaged(w, *r.Restore)
	}
	if r.Boot != nil {
		printDrillBoot(w, r.Boot)
	}
	if r.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", r.Warning)
	}
	fmt.Fprintf(w, "  total: %.2fs\n", r.TotalSeconds)
}

// drillCommand is 'pbsdirect drill'.
func drillCommand() commandSpec {
	return commandSpec{
		use:   "drill [flags] SNAPSHOT ARCHIVE TARGET | --scratch DIR [--list FILE | GROUP]",
		short: "disaster-recovery rehearsal: restore, read back, re-check, report",
		long: `Disaster-recovery rehearsal: restore an archive to TARGET, read the target back
and compare it with the snapshot, then report the time to restore and the
result (text, or one JSON object for monitoring). --remove deletes the
restored file after a successful drill. --boot then boots the restored disk
in QEMU with no network (as boot-check does, through a throw-away overlay:
the restored file is not changed) and checks that the guest comes up;
a guest that does not boot fails the drill (exit 1), a missing QEMU is
exit 3.

SNAPSHOT, ARCHIVE and TARGET are as for restore.

A fleet drill (--scratch DIR) drills the newest snapshot of every group in
scope, each disk image restored into DIR and removed after its drill: --ns
(--max-depth N: and the namespaces N levels below it; --all-namespaces: the
whole store), one GROUP (TYPE/ID) or SNAPSHOT, or the SNAPSHOT ARCHIVE pairs
of --list FILE; --parallel K at once; with --boot, each snapshot's boot
disk is booted. It prints a line per archive (a failed one's damaged
chunks under it) and a table, or one JSON value with every drill's report.
A scope that exists and holds no snapshot passes with a note. Interrupted,
it delivers no metrics.

A damaged archive's drill reads every chunk and reports every damaged or
missing one. --metrics-textfile and --metrics-push deliver Prometheus
metrics labelled with store, namespace, group and archive; the last success
times are carried over from the previous run's.`,
		example: `  pbsdirect drill --store /mnt/ds vm/100 drive-scsi0 /var/tmp/drill.raw --remove
  pbsdirect drill --store s3://backups/pbs --output-format json vm/100 drive-scsi0 /var/tmp/drill.raw
  pbsdirect drill --store /mnt/ds --ns prod --max-depth 7 --scratch /var/tmp/drill --parallel 2 --metrics-push http://pushgateway:9091
  pbsdirect drill --store /mnt/ds --boot --boot-timeout 10m vm/100 drive-scsi0 /var/tmp/drill.raw --remove`,
		build:    cmdDrill,
		complete: completeSnapshotImage,
	}
}
