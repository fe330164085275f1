package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/extract"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// pxarFlags are the flags of a pxar archive's extraction into a directory
// (restore SNAPSHOT root.pxar DIR; restore-guest of a ct/ snapshot).
type pxarFlags struct {
	numericOwner *bool
	sameOwner    *bool
	mapIDs       *string
	include      *[]string
}

// registerPxarFlags adds the extraction flags to fs; include says whether
// --include is one of them (restore, not restore-guest).
func (rc *restoreCmd) registerPxarFlags(fs *flag.FlagSet, include bool) {
	rc.px = &pxarFlags{
		numericOwner: fs.Bool("numeric-owner", false, "pxar archive: use the numeric owner ids (pxar stores only numbers, no user or group names: the ids written are always the archive's, shifted by --map-ids; accepted as tar's flag)"),
		sameOwner:    fs.Bool("same-owner", false, "pxar archive: set owners as the archive says also when not running as root (root always does; anyone else keeps its own uid and gid by default, as GNU tar)"),
		mapIDs:       fs.String("map-ids", "", "pxar archive: shift every uid and gid (owners, ACL entries, capabilities' root uid) by this amount, as an unprivileged container's id map does: 100000 for PVE's default map"),
	}
	if include {
		rc.px.include = fs.StringArray("include", nil, "pxar archive: extract only this path of the archive (etc/passwd, var/lib) and everything below it, with the directories above it; may be repeated")
	}
}

// extractOptions returns the extraction options of the flags; a bad
// --map-ids is a usage error.
func (rc *restoreCmd) extractOptions() (extract.Options, error) {
	o := extract.Options{NumericOwner: *rc.px.numericOwner, SameOwner: *rc.px.sameOwner, Force: *rc.force}
	if rc.px.include != nil {
		o.Include = *rc.px.include
		for _, inc := range o.Include {
			if path.Clean("/"+inc) == "/" {
				return o, usagef("--include %s names the whole archive: leave --include out", strconv.Quote(inc))
			}
		}
	}
	if s := *rc.px.mapIDs; s != "" {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil || n >= math.MaxUint32 {
			return o, usagef("--map-ids %s: want the id shift, a number like 100000", index.DisplayText(s))
		}
		o.MapIDs = uint32(n)
	}
	return o, nil
}

// pxarReport is the report of a pxar archive extracted into a directory.
type pxarReport struct {
	Snapshot string `json:"snapshot"`
	Archive  string `json:"archive"`
	Target   string `json:"target"`
	extract.Report
	ChunksFetched uint64  `json:"chunks-fetched"` // chunks read from the store and verified, both streams
	FetchedBytes  uint64  `json:"fetched-bytes"`  // their encoded bytes
	Seconds       float64 `json:"seconds"`
	ExitCode      int     `json:"exit-code"`
	// RateLimit is what the rate limits were (--rate, --burst,
	// --rate-requests) and how long reads waited on them; absent without.
	RateLimit *ratelimit.Report `json:"rate-limit,omitempty"`
}

// checkExtractDir refuses, before the store is opened, a DIR that is not
// a directory, whose parent is missing, or that is not empty without
// --force (a usage error, exit 2).
func checkExtractDir(dir string, force bool) error {
	if dir == "" {
		return usagef("DIR is empty: give the directory to extract into")
	}
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if pst, perr := os.Stat(filepath.Dir(dir)); perr != nil || !pst.IsDir() {
			return usagef("DIR %s: %s", index.DisplayText(filepath.Dir(dir)), dirArgProblem(perr, perr == nil && pst.IsDir()))
		}
		return nil
	}
	if err != nil || !st.IsDir() {
		return usagef("DIR %s: %s", index.DisplayText(dir), dirArgProblem(err, err == nil && st.IsDir()))
	}
	if force {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return &outsideError{fmt.Errorf("DIR %s: %w", index.DisplayText(dir), err)}
	}
	defer f.Close()
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return usagef("DIR %s is not empty: give --force to merge into it (an existing entry at a path the archive has is replaced, a directory kept; everything else stays)", index.DisplayText(dir))
	}
	return nil
}

// extractError classifies an extraction error for the exit code: a malformed
// archive is damage (exit 1), said so; the file system written is outside
// the data (3); a refusal of the command line is a usage error (2);
// damaged chunks keep their own type (1); a DIR another run is writing
// is outside the data (3).
func extractError(err error) error {
	var fe *extract.FSError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, extract.ErrBusy):
		return &outsideError{err}
	case errors.Is(err, extract.ErrNotEmpty), errors.Is(err, extract.ErrNotFound), errors.Is(err, extract.ErrIDRange):
		return usageOf(err)
	case errors.Is(err, pxar.ErrFormat):
		return &dataError{fmt.Errorf("damaged archive: %w", err)}
	case errors.As(err, &fe):
		return &outsideError{err}
	}
	return err
}

// restorePxar extracts pxar archive name of snapshot ref into dir.
func (rc *restoreCmd) restorePxar(ctx context.Context, ref, name, dir string, stdout, stderr io.Writer) error {
	if *rc.resume || *rc.restart {
		return usagef("--resume and --restart are for disk images: a pxar archive is extracted again with --force")
	}
	o, err := rc.extractOptions()
	if err != nil {
		return err
	}
	if err := checkExtractDir(dir, o.Force); err != nil {
		return err
	}
	if err := filetarget.CheckDirNotInStore(rc.sf.store, dir); err != nil {
		return usageOf(err)
	}
	sf, pf := &rc.sf, rc.pf
	start := time.Now()
	stopRetryLines := startRetryLines(stderr, sf.progress, "restore", &sf.retries)
	defer stopRetryLines()
	fetchers := pf.fetchersFor(sf.fetchSpec())
	ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{cryptMode: *rc.cryptMode, requireSig: *rc.requireSig}, fetchers)
	if err != nil {
		return err
	}
	defer store.Close()
	snap, err := snapshot.Resolve(ctx, store, ns, ref)
	if err != nil {
		return err
	}
	src, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		return err
	}
	rep, err := extractPxar(ctx, rc, src, name, dir, o, stderr, stopRetryLines)
	rep.Seconds = (time.Since(start) - keys.OpeningTime()).Seconds()
	err = extractError(err)
	rep.ExitCode = codeFor(ctx, err)
	rep.RateLimit = rc.sf.rate.limiter.Report()
	if rc.sf.json() {
		if jerr := writeJSON(stdout, rep); jerr != nil {
			return jerr
		}
		return err
	}
	if err != nil {
		return err
	}
	printPxarReport(stdout, rep)
	return nil
}

// extractPxar opens pxar archive name of src and extracts it into dir; the
// report counts what was extracted and fetched, also when it fails.
func extractPxar(ctx context.Context, rc *restoreCmd, src *snapshot.Reader, name, dir string, o extract.Options, stderr io.Writer, stopRetryLines func()) (*pxarReport, error) {
	rep := &pxarReport{Snapshot: src.Snapshot().String(), Archive: name, Target: dir}
	fetchers := rc.pf.fetchersFor(rc.sf.fetchSpec())
	defer raiseFetchProcs(rc.sf.store, fetchers)()
	px, err := archive.OpenPxar(ctx, src, name, archive.Options{Fetchers: fetchers, Salvaged: salvageNote(stderr, "pbsdirect")})
	if err != nil {
		if errors.Is(err, archive.ErrNoPxar) {
			return rep, usageOf(err)
		}
		return rep, err
	}
	defer px.Close()
	rep.Archive = px.MetaName
	counts := func() {
		rep.ChunksFetched, rep.FetchedBytes = px.Meta.Stats().Fetched.Load(), px.Meta.Stats().FetchedBytes.Load()
		if px.Payload != nil {
			rep.ChunksFetched += px.Payload.Stats().Fetched.Load()
			rep.FetchedBytes += px.Payload.Stats().FetchedBytes.Load()
		}
	}
	// The bar runs over the content bytes against the stream holding them
	// (the metadata stream of a legacy archive holds a little more).
	total := px.Meta.Size()
	if px.Payload != nil {
		total = px.Payload.Size()
	}
	var done atomic.Int64
	o.Progress = func(n int64) { done.Store(n) }
	o.Warn = func(msg string) { fmt.Fprintf(stderr, "pbsdirect: warning: %s\n", index.DisplayText(msg)) }
	stopRetryLines()
	stop := startProgressWatch(stderr, rc.sf.progress, "restore", total, done.Load, &rc.sf.retries).done
	r, err := extract.Run(ctx, px.Archive, dir, o)
	stop()
	if r != nil {
		rep.Report = *r
	}
	counts()
	if err != nil {
		return rep, pxarStreamError(src.Snapshot(), px, err)
	}
	return rep, nil
}

// printPxarReport prints rep as text.
func printPxarReport(w io.Writer, rep *pxarReport) {
	fmt.Fprintf(w, "restored %s/%s to %s: %d files (%s), %d directories, %d symlinks, %d hardlinks, %d device nodes, FIFOs and sockets in %.2fs\n",
		index.DisplayText(rep.Snapshot), index.DisplayText(rep.Archive), index.DisplayText(rep.Target),
		rep.Files, humanBytes(uint64(rep.Bytes)), rep.Dirs, rep.Symlinks, rep.Hardlinks, rep.Specials, rep.Seconds)
	fmt.Fprintf(w, "  chunks fetched: %d (%s encoded), every one checked\n", rep.ChunksFetched, humanBytes(rep.FetchedBytes))
	writeLimitLine(w, "  ", rep.RateLimit)
	if rep.Warnings > 0 {
		fmt.Fprintf(w, "  %d warning(s): entries skipped or not given every attribute (see above)\n", rep.Warnings)
	}
}
