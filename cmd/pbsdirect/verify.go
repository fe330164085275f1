package main

import (
	flag "github.com/spf13/pflag"

	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/progress"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// verifyHelp is the memory note of verify --help.
const verifyHelp = `Memory: the chunks verified in a run are remembered so that shared chunks are
checked once, about 64 bytes per distinct chunk, plus the plan of the archive
being checked (about 70 bytes per chunk of it) and --state's entries (about 64
bytes per chunk of this shard); the garbage collector's headroom roughly doubles
the peak. Measured: 1 M distinct chunks in one archive, 274 MiB peak unsharded,
213 MiB for one shard of 8. A store with 10 M distinct chunks needs about
1.3 GiB unsharded; with --shard I/N each process remembers only 1/N of them.
`

func cmdVerify(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.register(fs)
	sf.progress.register(fs)
	pf := registerPipelineFlags(fs, false)
	sf.rate.register(fs)
	crcOnly := fs.Bool("crc-only", false, "without --keyfile, check encrypted archives by structure and CRC only, as PBS's own verify job does (no decryption, no digest check; the manifest signature is not checked); the default key file is not opened")
	cryptMode := registerCryptMode(fs)
	requireSig := registerRequireSignature(fs)
	latest := fs.Bool("latest", false, "only the newest snapshot of each group (of TYPE/ID, or of every group in scope)")
	scope := registerScopeFlags(fs, "verify", "verifies")
	parallel := fs.Int("parallel", verify.DefaultParallel, "snapshots checked at once (manifests, indexes, blobs and chunks in flight together)")
	shard := fs.String("shard", "", "check only shard I of N of the chunks (I/N, 0 <= I < N), or auto/N with I from JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX or BATCH_TASK_INDEX; a chunk's shard is the first 8 bytes of its digest, big endian, modulo N")
	statePath := fs.String("state", "", "incremental verify: read and write the record of verified chunks here (PATH, s3://bucket/key or gs://bucket/key; never inside the datastore unless named there)")
	reverify := fs.String("reverify-after", "30d", "with --state: chunks verified less than this long ago are skipped (e.g. 30d, 12h; 0: check all, still recording)")
	reportLoc := fs.String("report", "", "also write the JSON report here (PATH, s3://bucket/key or gs://bucket/key)")
	var metrics metricsFlags
	metrics.register(fs, "verify")
	maxDamaged := fs.Int("max-damaged", verify.DefaultMaxDamaged, "damaged chunks reported in full (digest, byte ranges, location, error); the rest are counted (0: none)")
	damagedList := fs.String("damaged-list", "", "write every damaged chunk to this file, one JSON object per line, as it is found")
	dry := registerDryRunFlags(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
		if *damagedList != "" && backends.IsRemote(*damagedList) {
			return usagef("--damaged-list is a local file, not %s", *damagedList)
		}
		for flag, loc := range map[string]string{"--state": *statePath, "--report": *reportLoc, "--damaged-list": *damagedList} {
			if err := checkOutputPath(flag, loc); err != nil {
				return err
			}
		}
		if err := metrics.check(fs); err != nil {
			return err
		}
		if err := dry.check(fs); err != nil {
			return err
		}
		if *dry.dryRun && (*shard != "" || *statePath != "" || *crcOnly) {
			return usagef("--dry-run plans a whole verify with keys: not with --shard, --state or --crc-only")
		}
		if *maxDamaged < 0 {
			return usagef("--max-damaged must be 0 or more, not %d", *maxDamaged)
		}
		if err := scope.check(fs, sf.ns, fs.Arg(0)); err != nil {
			return err
		}
		if *parallel < 1 || *parallel > 1024 {
			return usagef("--parallel must be 1..1024, not %d", *parallel)
		}
		var sh verify.Shard
		if *shard != "" {
			var err error
			if sh, err = verify.ParseShard(*shard, os.Getenv); err != nil {
				return usagef("--shard: %v", err)
			}
		}
		window, err := verify.ParseAge(*reverify)
		if err != nil {
			return usagef("--reverify-after: %v", err)
		}
		var list *bufio.Writer
		var locked *lockedWriter // list, written by the verifier and the chain of stores
		var listFile *outfile.Replacement
		if *damagedList != "" {
			// A replacement renamed over it at the end: another name of an
			// old list keeps its content.
			r, err := outfile.New(*damagedList)
			if err != nil {
				return err
			}
			defer r.Abort()
			listFile, list = r, bufio.NewWriter(r)
			locked = &lockedWriter{w: list}
		}
		ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{cryptMode: *cryptMode, noDefault: *crcOnly, requireSig: *requireSig}, pf.fetchersFor(sf.fetchSpec()))
		if err != nil {
			return err
		}
		defer store.Close()
		listFellThrough(store, locked)
		sc := scope.scope(verify.Scope{NS: ns, Ref: fs.Arg(0), Latest: *latest})
		sel, err := verify.Select(ctx, store, sc)
		if err != nil {
			return err
		}
		if *dry.dryRun {
			return dryRunVerify(ctx, dry, &sf, pf, store, keys, sel.Snapshots, stdout)
		}
		var state *verify.State
		if *statePath != "" {
			state = loadState(ctx, &sf, *statePath, store.String(), window, stderr)
		}
		// One progress bar for one snapshot; snapshots checked at once would
		// draw over each other.
		prog := sf.progress
		if len(sel.Snapshots) > 1 {
			prog.Mode = progress.None
		}
		v := verify.New(store, verify.Options{
			Keys: keys, CRCOnly: *crcOnly, Pipeline: pf.options(sf.fetchSpec()), Parallel: *parallel,
			Shard: sh, State: state, SkipRemoved: sc.Ref == "" || !isSnapshotRef(sc.Ref),
			MaxDamaged: cmp.Or(*maxDamaged, -1), DamagedList: lockedOrNil(locked),
			Progress: func(name string, total int64, done func() int64) func() {
				return startProgress(stderr, prog, "verify "+name, total, done).done
			},
		})
		// As a restore: a P for every job and for as many readers as a restore
		// has writers, so that reads blocked in the kernel never hold the
		// jobs' Ps (measured: bench/README.md, fleet verify).
		defer raiseProcs(restore.Options{Jobs: pf.jobs, Writers: restore.DefaultWriters(pf.jobs)})()
		rep, runErr := v.Run(ctx, sel.Snapshots, func(r verify.SnapshotResult) {
			if r.Skipped {
				fmt.Fprintf(stderr, "pbsdirect: note: %s was removed while running (pruned since it was listed): skipped\n", index.DisplayText(r.Snapshot))
			}
			if !sf.json() {
				writeVerifyResult(ctx, stdout, r)
			}
		})
		rep.Store, rep.Shard, rep.Host = backends.DisplaySpec(sf.store), sh.String(), hostname()
		rep.Stores = storeCounts(store)
		rep.RateLimit = sf.rate.limiter.Report()
		rep.Requests = bucketRequests(store)
		rep.LeaveOut(storesLeftOut(&sf, store)...)
		rep.Note = sel.Note
		for _, n := range sel.Namespaces {
			rep.Namespaces = append(rep.Namespaces, n.String())
		}
		if runErr != nil {
			if jerr := limitOnFailure(stdout, sf.rate.limiter); jerr != nil {
				return errors.Join(runErr, jerr)
			}
			return runErr
		}
		if err := v.Removed(); err != nil {
			return err
		}
		return printVerifyReport(ctx, stdout, &rep, sf.json(), v.Outside(), func() error {
			if list != nil {
				err := cmp.Or(v.Err(), locked.err, list.Flush())
				if err != nil {
					err = outfile.WriteError(*damagedList, err)
				} else {
					err = listFile.Commit()
				}
				if err != nil {
					return fmt.Errorf("--damaged-list: %w", err)
				}
			}
			if state != nil {
				var b bytes.Buffer
				if _, err := state.WriteTo(&b, time.Now()); err != nil {
					return err
				}
				if err := writeLocation(ctx, &sf, *statePath, b.Bytes()); err != nil {
					return fmt.Errorf("--state: %w", err)
				}
			}
			if metrics.set() {
				if err := metrics.verifyMetrics(ctx, &sf, rep, store); err != nil {
					return err
				}
			}
			if *reportLoc != "" {
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				if err := writeLocation(ctx, &sf, *reportLoc, append(b, '\n')); err != nil {
					return fmt.Errorf("--report: %w", err)
				}
			}
			return nil
		})
	}
}

// writeVerifyResult prints the verify result r as text (WriteText). A
// snapshot an interrupt (ctx ended) cut off without finding damage reads
// "interrupted", its archives not done "interrupted" with the chunks
// checked so far: no FAILED, no "context canceled" — nothing was found
// wrong.
func writeVerifyResult(ctx context.Context, w io.Writer, r verify.SnapshotResult) {
	interrupted := !r.OK && ctx.Err() != nil
	for _, a := range r.Archives {
		if a.DamagedCount > 0 || len(a.Damaged) > 0 {
			interrupted = false
		}
	}
	if !interrupted {
		r.WriteText(w)
		return
	}
	dt := index.DisplayText
	fmt.Fprintf(w, "%s: interrupted\n", dt(r.Snapshot))
	for _, a := range r.Archives {
		word := "interrupted"
		if a.OK {
			word = verify.OKWord(true)
		}
		chunks := "chunks"
		if a.ChunksChecked == 1 {
			chunks = "chunk"
		}
		fmt.Fprintf(w, "  %-32s %s (%d %s checked)\n", dt(a.Archive), word, a.ChunksChecked, chunks)
	}
}

// isSnapshotRef reports whether ref names one snapshot (TYPE/ID/TIME), not a group.
func isSnapshotRef(ref string) bool {
	s, err := index.ParseSnapshotRef(ref)
	return err == nil && !s.IsGroup()
}

// printVerifyReport sets the report's exit code (outside: the first failure
// outside the data, or nil), calls save (to write it elsewhere), prints its
// end (JSON: all of it) and returns the error for a failed run.
func printVerifyReport(ctx context.Context, stdout io.Writer, rep *verify.Report, asJSON bool, outside error, save func() error) error {
	var verr error
	if inc := rep.Incomplete(); inc != nil {
		outside = cmp.Or(outside, inc)
	}
	see := map[bool]string{false: " (see above)", true: " (see \"snapshots\")"}[asJSON]
	var noKey error
	if rep.WithoutKey > 0 {
		// Not verified for want of a key: no damage, a cause outside the
		// data; a run with the key may verify them.
		// What to do depends on why: the key, or its passphrase.
		noKey = &outsideError{errors.New(rep.WithoutKeyText(see))}
	}
	switch {
	case !rep.OK && rep.Damaged() == 0 && cmp.Or(outside, noKey) != nil:
		// Every snapshot checked is fine, but not everything was checked.
		verr = outside
		if noKey != nil {
			verr = noKey
			if outside != nil {
				verr = fmt.Errorf("%w; %w", noKey, outside)
			}
		}
	case !rep.OK:
		verr = fmt.Errorf("verification failed: %d of %d snapshot(s) damaged or not verifiable%s", rep.Damaged(), len(rep.Snapshots), see)
		if rep.WithoutKey > 0 {
			verr = fmt.Errorf("%w, %d not verified for want of their key", verr, rep.WithoutKey)
		}
		if outside != nil {
			// Some archive could not be checked for a reason outside the data.
			verr = fmt.Errorf("%w; %w", verr, outside)
		} else {
			verr = &dataError{verr}
		}
	}
	rep.ExitCode = codeFor(ctx, verr)
	rep.Advice = rep.BackupAdvice()
	// A report, state or metrics file that could not be written fails the
	// run, after the result is printed: the checking was done.
	saveErr := save()
	if saveErr != nil && verr == nil {
		rep.ExitCode = codeFor(ctx, saveErr)
	}
	if asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		what := ""
		if rep.Shard != "" {
			what = " (shard " + index.DisplayText(rep.Shard) + ")"
		}
		head := fmt.Sprintf("verified %d snapshot(s)%s", len(rep.Snapshots), what)
		switch {
		case rep.OnlyKeysMissing():
			// No damage found: not "0 failed … FAILED".
			head = fmt.Sprintf("checked %d snapshot(s)%s, %d not verified for want of their key", len(rep.Snapshots), what, rep.WithoutKey)
		case !rep.OK:
			head = fmt.Sprintf("checked %d snapshot(s)%s, %d failed", len(rep.Snapshots), what, rep.Damaged())
			if rep.WithoutKey > 0 {
				head += fmt.Sprintf(", %d not verified for want of their key", rep.WithoutKey)
			}
		}
		fmt.Fprintf(stdout, "%s, %s, %s in %.2fs: %s\n", head, humanBytes(rep.Bytes), rep.ChunksText(), rep.Seconds, rep.ResultWord())
		printConnections(stdout, rep.Requests)
		printStores(stdout, rep.Stores)
		writeLimitLine(stdout, "", rep.RateLimit)
		printVerifyGaps(stdout, rep)
		if rep.DamagedUnlisted > 0 {
			fmt.Fprintf(stdout, "%d damaged chunk(s), %d of them not listed above (--max-damaged; --damaged-list FILE writes them all)\n", rep.DamagedChunks, rep.DamagedUnlisted)
		}
		if rep.Advice != "" {
			fmt.Fprintf(stdout, "advice: %s\n", rep.Advice)
		}
		if len(rep.Skipped) > 0 {
			fmt.Fprintf(stdout, "skipped %d snapshot(s) removed while running: %s\n", len(rep.Skipped), index.DisplayText(strings.Join(rep.Skipped, " ")))
		}
	}
	switch {
	case saveErr != nil && verr != nil:
		// The damage decides the exit code; the file not written is said too.
		return fmt.Errorf("%w; and %v", verr, saveErr)
	case saveErr != nil:
		return saveErr
	}
	return verr
}

// loadState reads the verify state at loc for store. A missing state
// starts empty; a damaged or foreign one is ignored with a warning.
func loadState(ctx context.Context, sf *storeFlags, loc, store string, window time.Duration, stderr io.Writer) *verify.State {
	b, err := readLocation(ctx, sf, loc, verify.MaxStateSize)
	st, ignored := verify.StateFrom(b, err, store, window)
	if ignored != nil {
		fmt.Fprintf(stderr, "pbsdirect verify: warning: --state %s ignored, every chunk is checked: %s\n", loc, index.DisplayText(ignored.Error()))
	}
	return st
}

// hostname returns the host's name, or "" when it is unknown.
func hostname() string {
	h, _ := os.Hostname()
	return h
}

// lockedOrNil returns w as an io.Writer, or nil for a nil w.
func lockedOrNil(w *lockedWriter) io.Writer {
	if w == nil {
		return nil
	}
	return w
}

// okWord is "ok" or "FAILED" (verify.OKWord).
func okWord(ok bool) string { return verify.OKWord(ok) }

// verifyCommand is 'pbsdirect verify'.
func verifyCommand() commandSpec {
	return commandSpec{
		use:   "verify [flags] [SNAPSHOT | TYPE/ID]",
		short: "verify a snapshot, a group, a namespace (tree) or the whole store",
		long: `Verify one snapshot, every snapshot of a group (TYPE/ID; --latest: the newest),
or every snapshot of the namespace (--max-depth N: and its children;
--all-namespaces: the whole store): every chunk is read and checked (CRC,
digest; AES-GCM with --keyfile) and the indexes against the manifest. PBS's
"verified" state in the store is not updated. Exits 1 when anything is damaged
or missing.

` + strings.TrimSuffix(verifyHelp, "\n"),
		example: `  pbsdirect verify --store /mnt/ds vm/100/2026-11-29T10:00:00Z
  pbsdirect verify --store s3://backups/pbs --keyfile enc.key --output-format json`,
		build:    cmdVerify,
		complete: completeOneSnapshot,
	}
}
