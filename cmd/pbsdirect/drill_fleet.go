package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/bootcheck"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

// fleetOptions are a fleet drill's flags.
type fleetOptions struct {
	scratch, list string
	parallel      int
	scope         *scopeFlags
	metrics       *metricsFlags
	// boot, when set (--boot), boots each snapshot's boot disk after its
	// read-back.
	boot *bootFlags
}

// drillFleet drills many archives into o.scratch: the newest snapshot of
// every group in scope (--ns, --max-depth, --all-namespaces, or the one
// GROUP or SNAPSHOT argument; each of its disk images), or the pairs of
// o.list, o.parallel at a time. It prints a line per archive as it ends
// and a final table (text), or one JSON value with every drill's report
// and the totals, and fails when any drill failed.
func drillFleet(ctx context.Context, fs *flag.FlagSet, rc *restoreCmd, o fleetOptions, stdout, stderr io.Writer) error {
	if o.scratch == "" {
		return usagef("--list needs --scratch DIR for the copies")
	}
	if o.list != "" && (fs.NArg() != 0 || o.scope.changed(fs)) {
		return usagef("a drill of a --list takes no SNAPSHOT, GROUP, --max-depth or --all-namespaces")
	}
	if fs.NArg() > 1 {
		return usagef("a fleet drill (--scratch) takes at most one GROUP (TYPE/ID) or SNAPSHOT, not SNAPSHOT ARCHIVE TARGET")
	}
	if fs.NArg() == 1 {
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
	}
	if err := o.scope.check(fs, rc.sf.ns, fs.Arg(0)); err != nil {
		return err
	}
	if o.parallel < 1 || o.parallel > 64 {
		return usagef("--parallel must be 1..64, not %d", o.parallel)
	}
	if fs.Changed("remove") || fs.Changed("force") {
		return usagef("a fleet drill creates its copies in --scratch and removes each after its drill: no --remove or --force")
	}
	if err := rc.sf.check(); err != nil {
		return err
	}
	if err := rc.pf.check(); err != nil {
		return err
	}
	if fi, err := os.Stat(o.scratch); err != nil || !fi.IsDir() {
		return usagef("--scratch %s: not a directory", o.scratch)
	}
	if err := checkScratchNotInStore(rc.sf.stores, o.scratch); err != nil {
		return err
	}
	if err := o.metrics.reach(ctx, &rc.sf, rc.sf.store); err != nil {
		return err
	}
	var items []drill.Item
	var err error
	if o.list != "" {
		items, err = readDrillList(o.list)
	} else {
		items, err = latestImages(ctx, rc, o.scope.scope(verify.Scope{Ref: fs.Arg(0)}), stderr)
		// Each item names its snapshot with its namespace (below --ns
		// with --max-depth): resolved from the root, not again in --ns.
		rc.sf.ns = ""
	}
	if es := (*drill.EmptyScopeError)(nil); errors.As(err, &es) {
		return drillNothing(ctx, rc, o, es.Note, stdout, stderr)
	}
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return fmt.Errorf("%w: nothing to drill", snapshot.ErrNoSnapshot)
	}
	// Partial copies a killed drill left, which no run holds, would
	// fill the scratch directory: removed first.
	removed, err := drill.CleanScratch(o.scratch)
	if len(removed) > 0 {
		fmt.Fprintf(stderr, "pbsdirect drill: note: removed %d partial output(s) or journal(s) or stale copies an earlier drill left in --scratch %s: %s\n",
			len(removed), index.DisplayText(o.scratch), index.DisplayText(strings.Join(removed, ", ")))
	}
	if err != nil {
		return fmt.Errorf("--scratch %s: removing what an earlier drill left: %w", o.scratch, err)
	}
	quiet := stderr
	if o.parallel > 1 {
		quiet = io.Discard // no interleaved progress bars
	}
	asJSON := rc.sf.json()
	reps := drill.Fleet(ctx, items, o.scratch, o.parallel, func(it drill.Item, target string) drill.Report {
		rep, err := drillOne(ctx, rc, it.Ref, it.Archive, target, removeAlways, o.boot, io.Discard, quiet)
		rep.ExitCode = codeFor(ctx, err)
		return rep
	}, func(rep drill.Report) {
		if !asJSON {
			printDrillLine(stdout, rep) // as it ends; JSON is one value, at the end
		}
	})
	if ctx.Err() != nil {
		// Interrupted: the metrics are left as the previous run delivered
		// them (a partial run's would drop the series, and the carried
		// last-success times, of the archives it did not reach).
		for i := range reps {
			if reps[i].NotRun {
				reps[i].ExitCode = codeFor(ctx, ctx.Err()) // the run's (130, 143), not a pass's 0
			}
		}
		printDrillTable(stdout, reps, asJSON)
		t := drill.Sum(reps)
		return fmt.Errorf("drill interrupted: %d of %d archive(s) cut off or not run, %d failed; metrics not delivered: %w",
			t.Interrupted+t.NotRun, len(reps), t.Failed, ctx.Err())
	}
	var merr error
	if o.metrics.set() {
		merr = o.metrics.drillMetrics(ctx, &rc.sf, rc.sf.store, reps)
	}
	failed, worst := printDrillTable(stdout, reps, asJSON)
	if failed > 0 {
		err := fmt.Errorf("drill failed for %d of %d archive(s)%s", failed, len(reps), worst)
		if merr != nil {
			err = fmt.Errorf("%w; and %v", err, merr)
		}
		switch fleetExitCode(reps) {
		case exitUsage:
			// Every failure is the command line's (a target refused as
			// named): nothing was drilled.
			return usageOf(err)
		case exitOutside:
			// Every failure lies outside the data (the store, a busy
			// target, the machine: each drill's error says which):
			// retrying may help (exit 3).
			return &outsideError{err}
		}
		return &dataError{err}
	}
	return cmp.Or(merr, ctx.Err())
}

// printDrillLine prints one line of a fleet drill as the archive's drill
// ends: its result and time to restore; a failure's first line of error.
func printDrillLine(w io.Writer, r drill.Report) {
	what := fmt.Sprintf("%s/%s", index.DisplayText(r.Snapshot), index.DisplayText(r.Archive))
	if r.OK {
		booted := ""
		if r.Boot != nil {
			booted = fmt.Sprintf(", booted in %.1fs", r.Boot.SecondsToBoot)
		}
		fmt.Fprintf(w, "drill %s: ok, restored in %.2fs%s, total %.2fs\n", what, r.RestoreSeconds, booted, r.TotalSeconds)
		return
	}
	if r.Interrupted() {
		fmt.Fprintf(w, "drill %s: %s\n", what, fleetResult(r))
		return
	}
	msg, _, _ := strings.Cut(r.Error, "\n")
	if r.DamagedCount > 0 {
		msg = fmt.Sprintf("%d damaged or missing chunk(s)", r.DamagedCount)
	}
	fmt.Fprintf(w, "drill %s: FAILED: %s\n", what, index.DisplayText(msg))
	printDamagedChunks(w, "  ", r.Damaged, r.DamagedCount)
}

// printDamagedChunks prints a line per damaged or missing chunk of ds
// (those listed: restore.MaxDamagedListed at most), with its digest, byte
// ranges, where it was read from and why it failed, each after indent,
// and how many of count were not listed.
func printDamagedChunks(w io.Writer, indent string, ds []verify.DamagedChunk, count int) {
	for _, d := range ds {
		kind := "damaged"
		if d.Missing {
			kind = "missing"
		}
		var offs []string
		for _, o := range d.Offsets {
			offs = append(offs, fmt.Sprintf("[%d,%d)", o, o+uint64(d.Length)))
		}
		if d.OffsetCount > len(d.Offsets) {
			offs = append(offs, fmt.Sprintf("… (%d offsets)", d.OffsetCount))
		}
		fmt.Fprintf(w, "%s%s chunk %s at %s: %s\n", indent, kind, d.Digest, strings.Join(offs, " "), index.DisplayText(d.Error))
	}
	if n := count - len(ds); n > 0 {
		fmt.Fprintf(w, "%s%d more damaged or missing chunk(s) not listed\n", indent, n)
	}
}

// readDrillList reads the "SNAPSHOT ARCHIVE" pairs of --list
// (drill.ParseList).
func readDrillList(path string) ([]drill.Item, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO is refused, not waited on
	if err != nil {
		return nil, usageOf(fmt.Errorf("--list: %w", err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("%s %s, not a regular file", path, fileKind(st.Mode()))
		}
		return nil, usageOf(fmt.Errorf("--list: %w", err))
	}
	items, err := drill.ParseList(f, checkSnapshotRef)
	if le := (*drill.LineError)(nil); errors.As(err, &le) {
		return nil, usagef("--list %s %v", path, le)
	}
	return items, err
}

// latestImages lists the disk images of the newest snapshot of every group
// in sc below --ns (drill.Latest; sc.NS is set here).
func latestImages(ctx context.Context, rc *restoreCmd, sc verify.Scope, stderr io.Writer) ([]drill.Item, error) {
	nsa, err := rc.sf.nsArg()
	if err != nil {
		return nil, err
	}
	store, err := openStore(ctx, &rc.sf, false, 16)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	warnDisagreement(stderr, store)
	ns, err := nsa.resolve(ctx, store, false)
	if err != nil {
		return nil, err
	}
	sc.NS = ns
	return drill.Latest(ctx, store, sc, func(s index.Snapshot, err error) {
		// Drilled anyway: the restore reports the manifest's failure.
		fmt.Fprintf(stderr, "pbsdirect drill: %s: %s\n", s, index.DisplayText(err.Error()))
	})
}

// bootCell is the boot column of a fleet drill's table: "up 12.3s", "did
// not boot" (the guest had its chance), "not run" (interrupted, QEMU
// failed), or "-" (no boot: not its snapshot's boot disk, or the drill
// failed before).
func bootCell(b *bootcheck.Report) string {
	switch {
	case b == nil:
		return "-"
	case b.OK:
		return fmt.Sprintf("up %.1fs", b.SecondsToBoot)
	case strings.HasPrefix(b.Reason, bootcheck.ErrDidNotBoot.Error()):
		return "did not boot"
	}
	return "not run"
}

// printDrillTable prints the final table (text) or the one JSON value of
// the fleet drill (drill.FleetReport) and returns the failures and a note
// naming the first failure.
func printDrillTable(w io.Writer, reps []drill.Report, asJSON bool) (failed int, note string) {
	t := drill.Sum(reps)
	if asJSON {
		writeJSON(w, drill.FleetReport{Totals: t, Drills: reps})
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		booted := slices.ContainsFunc(reps, func(r drill.Report) bool { return r.Boot != nil })
		head := "\nsnapshot\tarchive\tresult\ttime to restore\tsize\tMiB/s\tread back"
		if booted {
			head += "\tboot"
		}
		fmt.Fprintln(tw, head)
		for _, i := range t.Order {
			r := reps[i]
			ttr, size, rate := "-", "-", "-" // no restore completed: no time to restore
			if r.Restore != nil {
				ttr, size, rate = fmt.Sprintf("%.2fs", r.RestoreSeconds), humanBytes(r.Restore.Size), fmt.Sprintf("%.1f", r.Restore.MiBps)
			}
			rb := "-"
			if r.ReadBack != nil {
				rb = fmt.Sprintf("%.2fs", r.ReadBackSeconds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", index.DisplayText(r.Snapshot), index.DisplayText(r.Archive), fleetResult(r), ttr, size, rate, rb)
			if booted {
				fmt.Fprintf(tw, "\t%s", bootCell(r.Boot))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		fmt.Fprintf(w, "%d archive(s), %s restored in %.2fs of restore time, %d failed", len(reps), humanBytes(t.Bytes), t.RestoreSeconds, t.Failed)
		if t.Interrupted+t.NotRun > 0 {
			fmt.Fprintf(w, ", %d interrupted, %d not run", t.Interrupted, t.NotRun)
		}
		if s := t.SlowestAt; s >= 0 {
			fmt.Fprintf(w, "; slowest: %s/%s (%.2fs)", index.DisplayText(reps[s].Snapshot), index.DisplayText(reps[s].Archive), reps[s].RestoreSeconds)
		}
		fmt.Fprintln(w)
		if t.Salvaged > 0 {
			fmt.Fprintf(w, "warning: %d archive(s) passed only with %d chunk(s) recovered from .bad copies: PBS itself cannot restore them until the store is repaired (`pbsdirect repair --store STORE`); e.g. %s/%s\n",
				t.Salvaged, t.SalvagedChunks, index.DisplayText(reps[t.FirstSalvaged].Snapshot), index.DisplayText(reps[t.FirstSalvaged].Archive))
		}
	}
	if f := t.FirstFailed; f >= 0 {
		note = fmt.Sprintf(" (first: %s/%s: %s)", reps[f].Snapshot, reps[f].Archive, reps[f].Error)
	}
	return t.Failed, note
}

// checkScratchNotInStore refuses (a usage error, before any work) a
// scratch directory that is a local store of stores or lies below it
// (filetarget.CheckDirNotInStore): every drill's copy would be refused.
func checkScratchNotInStore(stores []string, scratch string) error {
	for _, st := range stores {
		if isRemote(st) {
			continue
		}
		if err := filetarget.CheckDirNotInStore(st, scratch); err != nil {
			return usageOf(fmt.Errorf("--scratch: %w", err))
		}
	}
	return nil
}

// fleetExitCode is the exit code of a fleet drill whose reports reps
// include a failure: 1 when any failed drill's own code is neither a
// usage error nor outside the data, else 3 when any lies outside, else 2
// (every failure a usage error).
func fleetExitCode(reps []drill.Report) int {
	code := exitUsage
	for _, r := range reps {
		switch {
		case r.OK || r.Interrupted():
		case r.ExitCode == exitUsage:
		case r.ExitCode == exitOutside:
			code = exitOutside
		default:
			return exitData
		}
	}
	return code
}

// fleetResult is the result of a fleet drill's archive r as its line and
// the table say it: ok, FAILED, interrupted (cut off by a signal) or not
// run (the fleet drill was interrupted before it started).
func fleetResult(r drill.Report) string {
	switch {
	case r.NotRun:
		return "not run"
	case r.Interrupted():
		return "interrupted"
	}
	return okWord(r.OK)
}

// drillNothing ends a fleet drill of a scope that exists and holds no
// snapshot as verify does: a note (stderr), an empty report with it
// (JSON) and the metrics of a run of no archives; it passes.
func drillNothing(ctx context.Context, rc *restoreCmd, o fleetOptions, note string, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "pbsdirect drill: note: nothing to drill: %s\n", index.DisplayText(note))
	if rc.sf.json() {
		if err := writeJSON(stdout, drill.FleetReport{Totals: drill.Sum(nil), Drills: []drill.Report{}, Note: note}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "0 archive(s) drilled: %s\n", index.DisplayText(note))
	}
	if o.metrics.set() {
		return o.metrics.drillMetrics(ctx, &rc.sf, rc.sf.store, nil)
	}
	return nil
}
