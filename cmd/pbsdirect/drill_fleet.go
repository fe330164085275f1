package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

// drillItem is one archive of a fleet drill.
type drillItem struct {
	ref, archive string
}

// drillFleet drills many archives into scratch: the newest snapshot of
// every group of --ns (each of its disk images), or the pairs of listFile,
// parallel at a time. It prints one JSON line per archive as it ends and a
// final table, and fails when any drill failed.
func drillFleet(ctx context.Context, fs *flag.FlagSet, rc *restoreCmd, scratch, listFile string, parallel int, metrics string, stdout, stderr io.Writer) error {
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
	var items []drillItem
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
	reps := make([]drillReport, len(items))
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, parallel)
	)
	quiet := stderr
	if parallel > 1 {
		quiet = io.Discard // no interleaved progress bars
	}
	for i, it := range items {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("%03d-%s-%s", i, strings.NewReplacer("/", "_", ":", "").Replace(it.ref), it.archive)
			target := filepath.Join(scratch, strings.TrimSuffix(name, ".fidx"))
			rep, err := drillOne(ctx, rc, it.ref, it.archive, target, true, io.Discard, quiet)
			if rep.Error == "" && err != nil {
				rep.Error = err.Error()
			}
			rep.ExitCode = codeFor(ctx, err)
			mu.Lock()
			defer mu.Unlock()
			reps[i] = rep
			// One JSON line per archive, as it ends.
			if b, err := jsonLine(rep); err == nil {
				stdout.Write(b)
			}
		})
	}
	wg.Wait()
	if metrics != "" {
		if err := writeDrillMetrics(metrics, reps); err != nil {
			return fmt.Errorf("--metrics-textfile: %w", err)
		}
	}
	failed, worst := printDrillTable(stdout, reps, rc.sf.json())
	if failed > 0 {
		err := fmt.Errorf("drill failed for %d of %d archive(s)%s", failed, len(reps), worst)
		if !slices.ContainsFunc(reps, func(r drillReport) bool { return !r.OK && r.ExitCode != exitOutside }) {
			// Every failure lies outside the data: retrying may help (exit 3).
			return fmt.Errorf("%w: %w", chunkstore.ErrUnavailable, err)
		}
		return &dataError{err}
	}
	return ctx.Err()
}

// jsonLine returns v as one line of JSON.
func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(b, '\n'), err
}

// readDrillList reads "SNAPSHOT ARCHIVE" pairs, one a line; blank lines and
// lines starting with # are skipped.
func readDrillList(path string) ([]drillItem, error) {
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
	var out []drillItem
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, usagef("--list %s line %d: want SNAPSHOT ARCHIVE, got %q", path, n, line)
		}
		if err := checkSnapshotRef(fields[0]); err != nil {
			return nil, usagef("--list %s line %d: %v", path, n, err)
		}
		out = append(out, drillItem{fields[0], index.NormalizeArchiveName(fields[1])})
	}
	return out, sc.Err()
}

// latestImages lists the disk images of the newest snapshot of every group
// of --ns.
func latestImages(ctx context.Context, rc *restoreCmd, stderr io.Writer) ([]drillItem, error) {
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
	sel, err := verify.Select(ctx, store, verify.Scope{NS: ns, Latest: true})
	if err != nil {
		return nil, err
	}
	var out []drillItem
	for _, s := range sel.Snapshots {
		m, err := snapshot.ReadManifest(ctx, store, s)
		if err != nil {
			// Drilled anyway: the restore reports the manifest's failure.
			out = append(out, drillItem{s.String(), "?"})
			fmt.Fprintf(stderr, "pbsdirect drill: %s: %s\n", s, index.DisplayText(err.Error()))
			continue
		}
		for _, f := range m.Files {
			if strings.HasSuffix(f.Filename, ".img.fidx") {
				out = append(out, drillItem{s.String(), f.Filename})
			}
		}
	}
	return out, nil
}

// printDrillTable prints the final table (text) or a summary line (JSON)
// and returns the failures and a note naming the slowest archive.
func printDrillTable(w io.Writer, reps []drillReport, asJSON bool) (failed int, note string) {
	var total float64
	var bytes uint64
	slowest := -1
	for i, r := range reps {
		if !r.OK {
			failed++
		}
		total += r.RestoreSeconds
		if r.Restore != nil {
			bytes += r.Restore.Size
		}
		if slowest < 0 || r.RestoreSeconds > reps[slowest].RestoreSeconds {
			slowest = i
		}
	}
	if asJSON {
		sum := map[string]any{"summary": true, "archives": len(reps), "failed": failed, "bytes": bytes, "restore-seconds": total}
		if slowest >= 0 {
			sum["slowest"] = reps[slowest].Snapshot + "/" + reps[slowest].Archive
		}
		writeJSON(w, sum)
	} else {
		order := make([]int, len(reps))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(reps[b].RestoreSeconds, reps[a].RestoreSeconds) })
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nsnapshot\tarchive\tresult\ttime to restore\tsize\tMiB/s\tread back")
		for _, i := range order {
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
		fmt.Fprintf(w, "%d archive(s), %s restored in %.2fs of restore time, %d failed", len(reps), humanBytes(bytes), total, failed)
		if slowest >= 0 {
			fmt.Fprintf(w, "; slowest: %s/%s (%.2fs)", index.DisplayText(reps[slowest].Snapshot), index.DisplayText(reps[slowest].Archive), reps[slowest].RestoreSeconds)
		}
		fmt.Fprintln(w)
	}
	for _, r := range reps {
		if !r.OK {
			note = fmt.Sprintf(" (first: %s/%s: %s)", r.Snapshot, r.Archive, r.Error)
			break
		}
	}
	return failed, note
}
