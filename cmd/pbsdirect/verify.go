package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "[flags] [SNAPSHOT]", stderr)
	var sf storeFlags
	sf.register(fs)
	pf := registerPipelineFlags(fs, false)
	crcOnly := fs.Bool("crc-only", false, "without --keyfile, check encrypted archives by structure and CRC only, as PBS's own verify job does (no decryption, no digest check; the manifest signature is not checked)")
	maxDamaged := fs.Int("max-damaged", verify.DefaultMaxDamaged, "damaged chunks reported in full (digest, byte ranges, location, error); the rest are counted (0: none)")
	damagedList := fs.String("damaged-list", "", "write every damaged chunk to this file, one JSON object per line, as it is found")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("want at most one SNAPSHOT, got %d arguments", fs.NArg())
	}
	if fs.NArg() == 1 {
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
	}
	if err := sf.check(); err != nil {
		return err
	}
	if err := pf.check(); err != nil {
		return err
	}
	if *maxDamaged < 0 {
		return usagef("--max-damaged must be 0 or more, not %d", *maxDamaged)
	}
	var list *bufio.Writer
	if *damagedList != "" {
		f, err := os.Create(*damagedList)
		if err != nil {
			return err
		}
		defer f.Close()
		list = bufio.NewWriter(f)
	}
	start := time.Now()
	ns, cc, store, err := sf.openAll(ctx, stderr, false, pf.fetchersFor(sf.store))
	if err != nil {
		return err
	}
	defer store.Close()
	var snaps []index.Snapshot
	if fs.NArg() == 1 {
		s, err := snapshot.Resolve(ctx, store, ns, fs.Arg(0))
		if err != nil {
			return err
		}
		snaps = append(snaps, s)
	} else {
		all, err := snapshot.List(ctx, store, ns)
		if err != nil {
			return err
		}
		for _, i := range all {
			snaps = append(snaps, i.Snapshot)
		}
		if len(snaps) == 0 {
			return fmt.Errorf("%w: no finished snapshot in %s of %s", snapshot.ErrNoSnapshot, snapshot.NamespaceName(ns), store)
		}
	}
	rep := verify.Report{OK: true}
	v := verify.New(store, verify.Options{
		Key: cc, CRCOnly: *crcOnly, Pipeline: pf.options(sf.store),
		MaxDamaged: cmp.Or(*maxDamaged, -1), DamagedList: writerOrNil(list),
		Progress: func(name string, total int64, done func() int64) func() {
			return startProgress(stderr, !sf.json(), "verify "+name, total, done).done
		},
	})
	for _, s := range snaps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := v.Snapshot(ctx, s)
		rep.Add(r)
		if !sf.json() {
			printSnapshotResult(stdout, r)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	if list != nil {
		if err := cmp.Or(v.Err(), list.Flush()); err != nil {
			return fmt.Errorf("--damaged-list %s: %w", *damagedList, err)
		}
	}
	if sf.json() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "verified %d snapshot(s), %s in %.2fs: %s\n", len(rep.Snapshots), humanBytes(rep.Bytes), rep.Seconds, okWord(rep.OK))
		if rep.DamagedUnlisted > 0 {
			fmt.Fprintf(stdout, "%d damaged chunk(s), %d of them not listed above (--max-damaged; --damaged-list FILE writes them all)\n", rep.DamagedChunks, rep.DamagedUnlisted)
		}
	}
	if !rep.OK {
		return fmt.Errorf("verification failed: %d of %d snapshot(s) damaged or not verifiable (see above; encrypted archives need --keyfile)", rep.Failed(), len(rep.Snapshots))
	}
	return nil
}

// writerOrNil returns w as an io.Writer, or nil for a nil w.
func writerOrNil(w *bufio.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return w
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

func printSnapshotResult(w io.Writer, r verify.SnapshotResult) {
	fmt.Fprintf(w, "%s: %s\n", r.Snapshot, okWord(r.OK))
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
	for _, a := range r.Archives {
		fmt.Fprintf(w, "  %-32s %s", a.Archive, okWord(a.OK))
		if a.CRCOnly {
			fmt.Fprint(w, " [CRC only, no key]")
		}
		if a.ChunksChecked > 0 || a.ChunksKnown > 0 {
			fmt.Fprintf(w, " (%d chunks checked", a.ChunksChecked)
			if a.ChunksKnown > 0 {
				fmt.Fprintf(w, ", %d already verified", a.ChunksKnown)
			}
			fmt.Fprint(w, ")")
		}
		fmt.Fprintln(w)
		if a.Error != "" && len(a.Damaged) == 0 {
			fmt.Fprintf(w, "    error: %s\n", a.Error)
		}
		for _, d := range a.Damaged {
			var offs []string
			for _, o := range d.Offsets {
				offs = append(offs, fmt.Sprintf("[%d,%d)", o, o+uint64(d.Length)))
			}
			if d.OffsetCount > len(d.Offsets) {
				offs = append(offs, fmt.Sprintf("… (%d offsets)", d.OffsetCount))
			}
			fmt.Fprintf(w, "    damaged chunk %s at %s (%s): %s\n", d.Digest, strings.Join(offs, " "), d.Location, d.Error)
		}
		if n := a.DamagedCount - len(a.Damaged); n > 0 {
			fmt.Fprintf(w, "    … and %d more damaged chunk(s)\n", n)
		}
	}
}
