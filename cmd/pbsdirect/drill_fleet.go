package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"text/tabwriter"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// drillFleet drills many archives into scratch: the newest snapshot of
// every group of --ns (each of its disk images), or the pairs of listFile,
// parallel at a time. It prints one JSON line per archive as it ends and a
// final table, and fails when any drill failed.
// With boot, each snapshot's boot disk is booted after its read-back.
func drillFleet(ctx context.Context, fs *flag.FlagSet, rc *restoreCmd, scratch, listFile string, parallel int, metrics string, boot *bootFlags, stdout, stderr io.Writer) error {
	if scratch == "" {
		return usagef("--list needs --scratch DIR for the copies")
	}
	if fs.NArg() != 0 {
		return usagef("a fleet drill (--scratch) takes no SNAPSHOT ARCHIVE TARGET")
	}
	if parallel < 1 || parallel > 64 {
		return usagef("--parallel must be 1..64, not %d", parallel)
	}
	if fs.Changed("remove") || fs.Changed("force") {
		return usagef("a fleet drill creates its copies in --scratch and removes each after success: no --remove or --force")
	}
	if err := rc.sf.check(); err != nil {
		return err
	}
	if err := rc.pf.check(); err != nil {
		return err
	}
	if fi, err := os.Stat(scratch); err != nil || !fi.IsDir() {
		return usagef("--scratch %s: not a directory", scratch)
	}
	var items []drill.Item
	var err error
	if listFile != "" {
		items, err = readDrillList(listFile)
	} else {
		items, err = latestImages(ctx, rc, stderr)
	}
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return fmt.Errorf("%w: nothing to drill", snapshot.ErrNoSnapshot)
	}
	quiet := stderr
	if parallel > 1 {
		quiet = io.Discard // no interleaved progress bars
	}
	reps := drill.Fleet(ctx, items, scratch, parallel, func(it drill.Item, target string) drill.Report {
		rep, err := drillOne(ctx, rc, it.Ref, it.Archive, target, true, boot, io.Discard, quiet)
		rep.ExitCode = codeFor(ctx, err)
		return rep
	}, func(rep drill.Report) {
		json.NewEncoder(stdout).Encode(rep) // one JSON line per archive, as it ends
	})
	if metrics != "" {
		if err := writeDrillMetrics(metrics, reps); err != nil {
			return fmt.Errorf("--metrics-textfile: %w", err)
		}
	}
	failed, worst := printDrillTable(stdout, reps, rc.sf.json())
	if failed > 0 {
		err := fmt.Errorf("drill failed for %d of %d archive(s)%s", failed, len(reps), worst)
		if !slices.ContainsFunc(reps, func(r drill.Report) bool { return !r.OK && r.ExitCode != exitOutside }) {
			// Every failure lies outside the data: retrying may help (exit 3).
			return fmt.Errorf("%w: %w", chunkstore.ErrUnavailable, err)
		}
		return &dataError{err}
	}
	return ctx.Err()
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
// of --ns (drill.Latest).
func latestImages(ctx context.Context, rc *restoreCmd, stderr io.Writer) ([]drill.Item, error) {
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
	return drill.Latest(ctx, store, ns, func(s index.Snapshot, err error) {
		// Drilled anyway: the restore reports the manifest's failure.
		fmt.Fprintf(stderr, "pbsdirect drill: %s: %s\n", s, index.DisplayText(err.Error()))
	})
}

// printDrillTable prints the final table (text) or a summary line (JSON)
// and returns the failures and a note naming the first failure.
func printDrillTable(w io.Writer, reps []drill.Report, asJSON bool) (failed int, note string) {
	t := drill.Sum(reps)
	if asJSON {
		writeJSON(w, t)
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nsnapshot\tarchive\tresult\ttime to restore\tsize\tMiB/s\tread back")
		for _, i := range t.Order {
			r := reps[i]
			size, rate := "-", "-"
			if r.Restore != nil {
				size, rate = humanBytes(r.Restore.Size), fmt.Sprintf("%.1f", r.Restore.MiBps)
			}
			rb := "-"
			if r.ReadBack != nil {
				rb = fmt.Sprintf("%.2fs", r.ReadBackSeconds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fs\t%s\t%s\t%s\n", index.DisplayText(r.Snapshot), index.DisplayText(r.Archive), okWord(r.OK), r.RestoreSeconds, size, rate, rb)
		}
		tw.Flush()
		fmt.Fprintf(w, "%d archive(s), %s restored in %.2fs of restore time, %d failed", len(reps), humanBytes(t.Bytes), t.RestoreSeconds, t.Failed)
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
