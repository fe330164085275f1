package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("verify", "[flags] [SNAPSHOT]", stdout, stderr)
	var sf storeFlags
	sf.register(fs)
	sf.progress.register(fs)
	pf := registerPipelineFlags(fs, false)
	crcOnly := fs.Bool("crc-only", false, "without --keyfile, check encrypted archives by structure and CRC only, as PBS's own verify job does (no decryption, no digest check; the manifest signature is not checked); the default key file is not opened")
	cryptMode := registerCryptMode(fs)
	requireSig := registerRequireSignature(fs)
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
	start := time.Now()
	ns, keys, store, err := sf.openAll(ctx, stderr, *cryptMode, *crcOnly, pf.fetchersFor(sf.fetchSpec()))
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
		KeyFor: func(m *index.Manifest) (*crypto.Config, error) {
			cc, err := keys.forManifest(m)
			if err == nil {
				err = checkSigned(m, m.Snapshot(ns), cc, *requireSig, stderr)
			}
			return cc, err
		},
		CRCOnly: *crcOnly, Pipeline: pf.options(sf.fetchSpec()),
		Progress: func(name string, total int64, done func() int64) func() {
			return startProgress(stderr, sf.progress, "verify "+name, total, done).done
		},
	})
	for _, s := range snaps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := v.Snapshot(ctx, s)
		// A snapshot pruned while a namespace is verified is skipped, not
		// damaged; an explicitly named one is reported as removed.
		switch gone := !r.OK && snapshot.Gone(ctx, store, s); {
		case gone && fs.NArg() == 0:
			r = verify.SnapshotResult{Snapshot: r.Snapshot, OK: true, Skipped: true, Note: "removed while running (pruned since it was listed): skipped"}
			fmt.Fprintf(stderr, "pbsdirect: note: %s was removed while running (pruned since it was listed): skipped\n", s)
		case gone:
			return fmt.Errorf("snapshot %s in %s: %w", s, store, snapshot.ErrRemoved)
		}
		rep.Add(r)
		if !sf.json() {
			printSnapshotResult(stdout, r)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	var verr error
	if !rep.OK {
		verr = fmt.Errorf("verification failed: %d of %d snapshot(s) damaged or not verifiable%s", rep.Failed(), len(rep.Snapshots), map[bool]string{false: " (see above)", true: " (see \"snapshots\")"}[sf.json()])
		if out := v.Outside(); out != nil {
			// Some archive could not be checked for a reason outside the data.
			verr = fmt.Errorf("%w; %w", verr, out)
		}
	}
	rep.ExitCode = codeFor(ctx, verr)
	rep.Stores = storeCounts(store)
	if sf.json() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "verified %d snapshot(s), %s in %.2fs: %s\n", len(rep.Snapshots), humanBytes(rep.Bytes), rep.Seconds, okWord(rep.OK))
		printStores(stdout, rep.Stores)
		if len(rep.Skipped) > 0 {
			fmt.Fprintf(stdout, "skipped %d snapshot(s) removed while running: %s\n", len(rep.Skipped), strings.Join(rep.Skipped, " "))
		}
	}
	return verr
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

func printSnapshotResult(w io.Writer, r verify.SnapshotResult) {
	if r.Skipped {
		fmt.Fprintf(w, "%s: skipped\n  note: %s\n", r.Snapshot, r.Note)
		return
	}
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
			fmt.Fprintf(w, "    damaged chunk %s at %s: %s\n", d.Digest, strings.Join(offs, " "), d.Error)
		}
	}
}
