package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// accessFlags are the flags of the commands that read a snapshot's
// archives in place (mount, serve-nbd).
type accessFlags struct {
	sf        storeFlags
	pf        *pipelineFlags
	cacheSize string
	cache     int64 // parsed --cache-size, bytes
	// readsReported: the caller reports every failed read itself (boot-
	// check ends with it), so the readers do not log them on stderr too.
	readsReported bool
}

func (a *accessFlags) register(fs *flag.FlagSet) {
	a.sf.register(fs)
	a.pf = registerPipelineFlags(fs, false)
	a.sf.rate.register(fs)
	fs.MarkHidden("jobs") // reads decode in the fetchers; --jobs only sizes the default
	fs.StringVar(&a.cacheSize, "cache-size", "256MiB", "decoded chunks kept in memory, shared by the archives (e.g. 64MiB, 1GiB); peak memory is about this plus 64 MiB")
}

func (a *accessFlags) check() error {
	if err := a.sf.check(); err != nil {
		return err
	}
	if err := a.pf.check(); err != nil {
		return err
	}
	n, err := parseSize(a.cacheSize)
	if err != nil || n < 8<<20 {
		return usagef("--cache-size %q: want a size of at least 8MiB, e.g. 256MiB or 1GiB", a.cacheSize)
	}
	a.cache = n
	return nil
}

// parseSize parses a byte count with an optional binary unit: 1048576,
// 512K, 256M, 256MiB, 1G, 1GiB.
func parseSize(s string) (int64, error) {
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, err
	}
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KIB": 10, "M": 20, "MIB": 20, "G": 30, "GIB": 30, "T": 40, "TIB": 40}
	sh, ok := shift[unit]
	if !ok || n < 0 || n > (1<<62)>>sh {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n << sh, nil
}

// snapshotAccess is a snapshot opened for reading in place: a Reader per
// chunk index archive and the decoded blobs (archive.Set).
type snapshotAccess struct {
	archive.Set
	store   chunkstore.Store
	snap    index.Snapshot
	when    time.Time
	unlimit func()             // puts the memory limit back
	limit   *ratelimit.Limiter // --rate, --burst, --rate-requests; nil: none
}

// open resolves ref and opens every chunk index archive (only the fixed
// ones with imagesOnly) and, with blobs, decodes the blob archives.
// --cache-size is shared out among the archives. Damaged chunks are
// logged to stderr as reads meet them.
func (a *accessFlags) open(ctx context.Context, ref string, imagesOnly, blobs bool, stderr io.Writer, cmd string) (*snapshotAccess, error) {
	sf := &a.sf
	fetchers := a.pf.fetchersFor(sf.fetchSpec())
	ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{}, fetchers)
	if err != nil {
		return nil, err
	}
	sa := &snapshotAccess{store: store, limit: sf.rate.limiter}
	ok := false
	defer func() {
		if !ok {
			sa.Close()
		}
	}()
	src, err := snapshot.Open(ctx, store, ns, ref, keys)
	if err != nil {
		return nil, err
	}
	sa.snap, sa.when = src.Snapshot(), time.Unix(src.Snapshot().Time, 0)
	logf := func(err error) { fmt.Fprintf(stderr, "pbsdirect %s: %s\n", cmd, index.DisplayText(err.Error())) }
	if a.readsReported {
		logf = func(error) {}
	}
	set, err := archive.OpenSet(ctx, src, imagesOnly, blobs, archive.Options{
		CacheSize: a.cache,
		Fetchers:  fetchers,
		Log:       logf,
		Salvaged:  salvageNote(stderr, "pbsdirect "+cmd),
	})
	if err != nil {
		return nil, err
	}
	sa.Set = *set
	unlimit := archive.LimitMemory(a.cache)
	unraise := raiseFetchProcs(sf.store, fetchers)
	sa.unlimit = func() { unraise(); unlimit() }
	ok = true
	return sa, nil
}

// report prints what each reader fetched, for the end of a serving run.
func (sa *snapshotAccess) report(w io.Writer) {
	for i, r := range sa.Readers {
		st := r.Stats()
		fmt.Fprintf(w, "  %s: %d chunks fetched and verified (%s encoded, %d read ahead)", index.DisplayText(sa.Names[i]), st.Fetched.Load(), humanBytes(st.FetchedBytes.Load()), st.ReadAhead.Load())
		if n := st.Salvaged.Load(); n > 0 {
			fmt.Fprintf(w, "; %d of them recovered from .bad copies", n)
		}
		if n := st.FailedChunks.Load(); n > 0 {
			fmt.Fprintf(w, "; %d chunks missing or damaged, %d chunk reads failed", n, st.FailedReads.Load())
		}
		fmt.Fprintln(w)
	}
	writeLimitLine(w, "  ", sa.limit.Report())
}

// Close closes the readers and the store and puts the memory limit back.
func (sa *snapshotAccess) Close() {
	if sa.unlimit != nil {
		sa.unlimit()
	}
	sa.Set.Close()
	sa.store.Close()
}

// raiseFetchProcs gives every fetcher of a directory store a P (raiseProcs):
// the fetchers read chunk files with blocking system calls and decode what
// they read, as a restore's jobs and writers do. Bucket reads wait in the
// network poller and need none. It returns the function that puts
// GOMAXPROCS back.
func raiseFetchProcs(store string, fetchers int) (restoreProcs func()) {
	if isRemote(store) {
		return func() {}
	}
	return raiseProcs(restore.Options{Jobs: fetchers})
}

// restoreToStdout writes archive of snapshot ref to stdout in order: a
// blob decoded, an image or dynamic archive through the archive reader
// (zero chunks as zeros, chunks read ahead as a restore fetches them).
// Memory stays bounded by the reader's cache: two chunks per fetcher. The summary goes to stderr.
// A reader that closes standard output early (`| head -c 1`) ends it with
// an error wrapping syscall.EPIPE (exit 3), not a silent SIGPIPE death.
func (rc *restoreCmd) restoreToStdout(ctx context.Context, ref, name string, stdout, stderr io.Writer) error {
	start := time.Now()
	src, opts, done, err := rc.stdoutSource(ctx, ref, stderr)
	if err != nil {
		return err
	}
	defer done()
	return rc.copyToStdout(ctx, src, name, opts, start, stdout, stderr)
}

// stdoutSource opens snapshot ref for a restore to standard output (an
// archive, a blob, a pxar stream): the stores and keys of the flags, the
// snapshot's reader, and the archive options (fetchers, the .bad salvage
// note on stderr). Until done is called, writes to a closed pipe on fd 1
// fail with EPIPE instead of killing the process with SIGPIPE (exit 141,
// no message). Errors are the store's and the snapshot's.
func (rc *restoreCmd) stdoutSource(ctx context.Context, ref string, stderr io.Writer) (src *snapshot.Reader, opts archive.Options, done func(), err error) {
	sf, pf := &rc.sf, rc.pf
	signal.Ignore(syscall.SIGPIPE)
	fetchers := pf.fetchersFor(sf.fetchSpec())
	ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{cryptMode: *rc.cryptMode, requireSig: *rc.requireSig}, fetchers)
	if err != nil {
		signal.Reset(syscall.SIGPIPE)
		return nil, opts, nil, err
	}
	if src, err = snapshot.Open(ctx, store, ns, ref, keys); err != nil {
		store.Close()
		signal.Reset(syscall.SIGPIPE)
		return nil, opts, nil, err
	}
	lower := raiseFetchProcs(sf.store, fetchers)
	done = func() {
		lower()
		store.Close()
		signal.Reset(syscall.SIGPIPE)
	}
	return src, archive.Options{Fetchers: fetchers, Salvaged: salvageNote(stderr, "pbsdirect")}, done, nil
}

// copyToStdout writes archive or blob name of src to stdout, checked as it
// goes, and says on stderr what was restored (since start); a reader that
// closed standard output ends it with stdoutError (exit 3).
func (rc *restoreCmd) copyToStdout(ctx context.Context, src *snapshot.Reader, name string, opts archive.Options, start time.Time, stdout, stderr io.Writer) error {
	snap := src.Snapshot()
	n, err := archive.Copy(ctx, src, name, stdout, opts)
	if ce := (*archive.CopyError)(nil); errors.As(err, &ce) {
		return stdoutError(ce.Name, ce.N, ce.Err)
	}
	if err != nil {
		return err
	}
	el := time.Since(start)
	switch {
	case rc.sf.json():
	case strings.HasSuffix(name, ".blob"): // a few KiB: a rate would say nothing
		fmt.Fprintf(stderr, "restored %s/%s to standard output: %s, verified\n", snap, index.DisplayText(name), humanBytes(uint64(n)))
	default:
		fmt.Fprintf(stderr, "restored %s/%s to standard output: %s in %.2fs (%.1f MiB/s), verified\n",
			snap, index.DisplayText(name), humanBytes(uint64(n)), el.Seconds(), restore.MiBps(uint64(n), el))
	}
	return nil
}

// salvageNote returns the archive.Options.Salvaged function that says on
// stderr, after who ("pbsdirect mount"), which chunk was recovered from
// which .bad copy.
func salvageNote(stderr io.Writer, who string) func(crypto.Digest, string) {
	return func(d crypto.Digest, copy string) {
		fmt.Fprintf(stderr, "%s: note: chunk %s missing or damaged in every store, recovered from a .bad copy: %s (PBS does not read it; `pbsdirect repair --store STORE` or renaming mends the store)\n", who, d, index.DisplayText(copy))
	}
}

// stdoutError is the error of a restore of archive name to standard output
// that failed after n bytes; a reader gone (EPIPE) is said so plainly.
func stdoutError(name string, n int64, err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("restore of %s to standard output stopped after %d bytes: the reading end of the pipe was closed (broken pipe): the archive was not written whole: %w", name, n, err)
	}
	return fmt.Errorf("restore of %s to standard output failed after %d bytes: %w", name, n, err)
}
