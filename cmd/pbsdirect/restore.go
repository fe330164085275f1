package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// restoreSummary is the final report of a restore (text or JSON).
type restoreSummary struct {
	Snapshot      string  `json:"snapshot"`
	Archive       string  `json:"archive"`
	Target        string  `json:"target"`
	Size          uint64  `json:"size"`           // image bytes
	DataBytes     uint64  `json:"data-bytes"`     // non-zero bytes written
	ZeroBytes     uint64  `json:"zero-bytes"`     // bytes of zero chunks, never fetched
	FetchedBytes  uint64  `json:"fetched-bytes"`  // encoded bytes read from the store
	ChunksFetched uint64  `json:"chunks-fetched"` // unique chunks fetched and verified
	ZeroChunks    uint64  `json:"zero-chunks"`    // zero-chunk positions skipped
	DedupHits     uint64  `json:"dedup-hits"`     // positions served from an already fetched chunk
	Seconds       float64 `json:"seconds"`        // wall time of the whole restore
	MiBps         float64 `json:"mib-per-second"` // image bytes / seconds
	DataMiBps     float64 `json:"data-mib-per-second"`
	Direct        bool    `json:"o-direct"`
	Encrypted     bool    `json:"encrypted"`
	Jobs          int     `json:"jobs"`
	Writers       int     `json:"writers"`
	Fetchers      int     `json:"fetchers"`
	Layout        string  `json:"bucket-layout,omitempty"`
	Retries       int64   `json:"retries"`
	// Requests counts what the bucket request policy did: throttled
	// answers, stalled transfers, and the changes of the GETs in flight.
	Requests   *bucket.Stats `json:"bucket-requests,omitempty"`
	ZeroRanges string        `json:"zero-ranges"` // holes, punched, zeroed or skipped (--assume-zeroed)
	// ResumedChunks are the chunks an interrupted restore had made durable
	// (its journal), not fetched again by this --resume.
	ResumedChunks int `json:"resumed-chunks,omitempty"`
	// Stores says, with several --store, how many chunks and bytes came
	// from each and how many copies fell through (missing, damaged).
	Stores []chunkstore.MemberStats `json:"stores,omitempty"`
	// DamagedRanges are the image's byte ranges written as zeros because
	// their chunk was missing or damaged in every store (--on-missing,
	// --on-corrupt zero), adjacent ranges merged; DamagedChunks counts
	// those chunks. The image is then "restored with damage" (exit 1).
	DamagedRanges []restore.Range `json:"damaged-ranges,omitempty"`
	DamagedChunks int             `json:"damaged-chunks,omitempty"`
	ExitCode      int             `json:"exit-code"` // the process exit code (0: restored, verified and synced)
}

// restoreCmd holds the flags of restore (and drill, which restores first).
type restoreCmd struct {
	sf           storeFlags
	pf           *pipelineFlags
	force        *bool
	assumeZeroed *bool
	noDirect     *bool
	stdoutOK     bool // TARGET may be "-" (restore, not drill)
	// keepWork (restore, not drill): a stopped restore keeps its partial
	// output and journal whatever the cause, a rerun over them without
	// --resume is refused unless --restart, and a --resume run that
	// completes leaves its completion record. A drill discards a failed
	// run's work unless the cause was outside the data or an interruption.
	keepWork   bool
	follow     *bool
	resume     *bool
	restart    *bool
	cryptMode  *string
	requireSig *bool
	onMissing  *string // nil for drill: a drill never writes zeros for data
	onCorrupt  *string
	damage     [2]restore.Damage // parsed --on-missing, --on-corrupt
}

// registerDamageFlags adds --on-missing and --on-corrupt (restore only).
func (rc *restoreCmd) registerDamageFlags(fs *flag.FlagSet) {
	rc.onMissing = fs.String("on-missing", "fail", "a chunk that no store has (missing, 0-byte): fail, or zero: write zeros for exactly its byte ranges, list them, and exit 1 \"restored with damage\"")
	rc.onCorrupt = fs.String("on-corrupt", "fail", "a chunk whose every copy fails its check (CRC, decryption, digest): fail, or zero (as --on-missing)")
}

// registerRestoreFlags adds the store, pipeline and target flags to fs.
func registerRestoreFlags(fs *flag.FlagSet) *restoreCmd {
	rc := &restoreCmd{}
	rc.sf.register(fs)
	rc.sf.progress.register(fs)
	rc.pf = registerPipelineFlags(fs, true)
	rc.force = fs.Bool("force", false, "overwrite an existing regular file (zero ranges are punched so it matches the image exactly), or a block device holding a file system, partition table, LVM, RAID or other signature; write an image whose GPT is for another sector size than the device's (with a warning)")
	rc.assumeZeroed = fs.Bool("assume-zeroed", false, "the target block device already reads as zeros: skip zeroing zero ranges (refused on a device holding a signature)")
	rc.noDirect = fs.Bool("no-direct", false, "do not use O_DIRECT for the target")
	rc.resume = fs.Bool("resume", false, "continue a stopped restore of the same snapshot, archive and target, fetching no chunk its journal records as durable and the target still holds (the journal is beside the partial output; for a block device in $XDG_CACHE_HOME/pbsdirect, $HOME/.cache/pbsdirect, /var/cache/pbsdirect, /var/tmp or /tmp); with nothing to resume the restore starts; over an existing file no completion record vouches for (restored without --resume) every chunk is read back and checked: whole, it exits 0 writing nothing, else it is refused naming --force")
	rc.restart = fs.Bool("restart", false, "start over an interrupted restore to TARGET, discarding its partial output and journal (without --restart or --resume such a restore is refused)")
	rc.cryptMode = registerCryptMode(fs)
	rc.follow = fs.Bool("follow-symlinks", false, "write through a symbolic link at TARGET to the file it names (links to block devices are always followed)")
	rc.requireSig = registerRequireSignature(fs)
	return rc
}

// check validates the parsed flags and the three arguments.
func (rc *restoreCmd) check(fs *flag.FlagSet) error {
	if fs.NArg() != 3 {
		return usagef("want SNAPSHOT ARCHIVE TARGET, got %d argument(s)", fs.NArg())
	}
	if err := rc.sf.check(); err != nil {
		return err
	}
	if err := rc.pf.check(); err != nil {
		return err
	}
	if *rc.resume && *rc.restart {
		return usagef("--resume continues an interrupted restore, --restart discards it: give one")
	}
	if fs.Arg(2) == "-" && !rc.stdoutOK {
		return usagef("a drill restores to a file or block device, not to standard output")
	}
	if fs.Arg(2) == "-" && rc.sf.json() {
		if fs.Changed("output-format") {
			return usagef("--output-format %s writes to standard output: not with TARGET -", rc.sf.outputFormat)
		}
		// PROXMOX_OUTPUT_FORMAT (exported for proxmox-backup-client) asks
		// for no JSON here: standard output carries the archive.
		rc.sf.outputFormat = formatText
	}
	return checkSnapshotRef(fs.Arg(0))
}

// checkSnapshotRef turns a malformed SNAPSHOT argument into a usage error.
func checkSnapshotRef(ref string) error {
	if _, err := index.ParseSnapshotRef(ref); err != nil {
		// The parse error names ref already.
		return usagef("SNAPSHOT: %v (want TYPE/ID/TIME like vm/100/2026-11-29T10:00:00Z, or TYPE/ID for the latest)", err)
	}
	return nil
}

// restored is what a finished image restore leaves for reports and drills.
type restored struct {
	summary restoreSummary
	plan    *restore.Plan
	key     *crypto.Config // nil unless the archive is encrypted
	created bool           // the target file was created by the restore
	// target is committed (synced, renamed into place) and still open and
	// locked, for a read-back; the caller closes it.
	target *restore.FileTarget
	// damage lists the chunks written as zeros (--on-missing/--on-corrupt
	// zero); nil for a clean restore.
	damage *restore.DamagedError
}

func cmdRestore(fs *flag.FlagSet) commandFunc {
	rc := registerRestoreFlags(fs)
	rc.registerDamageFlags(fs)
	rc.stdoutOK = true
	rc.keepWork = true
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
		if fs.NArg() == 3 && fs.Arg(2) == "-" && !fs.Changed("output-format") {
			// Standard output carries the archive: no JSON result after it,
			// whatever PROXMOX_OUTPUT_FORMAT says.
			textOnly(stdout)
		}
		if err := rc.check(fs); err != nil {
			return err
		}
		for i, f := range []*string{rc.onMissing, rc.onCorrupt} {
			d, err := restore.ParseDamage(*f)
			if err != nil {
				return usagef("--%s: %v", []string{"on-missing", "on-corrupt"}[i], err)
			}
			rc.damage[i] = d
		}
		if fs.Arg(2) == "-" {
			return rc.restoreToStdout(ctx, fs.Arg(0), index.NormalizeArchiveName(fs.Arg(1)), stdout, stderr)
		}
		r, err := rc.run(ctx, fs.Arg(0), index.NormalizeArchiveName(fs.Arg(1)), fs.Arg(2), true, stdout, stderr)
		if err != nil || r == nil {
			return err
		}
		if err := r.target.Close(false); err != nil {
			return err
		}
		sum := r.summary
		var damaged error
		if r.damage != nil {
			damaged = fmt.Errorf("restored with damage: %w", r.damage)
		}
		if rc.sf.json() {
			if err := writeJSON(stdout, sum); err != nil {
				return err
			}
			return damaged
		}
		fmt.Fprintf(stdout, "restored %s/%s to %s: %s in %.2fs (%.1f MiB/s; %s data at %.1f MiB/s)\n",
			index.DisplayText(sum.Snapshot), index.DisplayText(sum.Archive), index.DisplayText(sum.Target), humanBytes(sum.Size), sum.Seconds, sum.MiBps, humanBytes(sum.DataBytes), sum.DataMiBps)
		fmt.Fprintf(stdout, "  chunks fetched: %d (%s encoded), zero chunks not fetched: %d (%s, %s), dedup hits: %d, O_DIRECT: %v, verified and synced\n",
			sum.ChunksFetched, humanBytes(sum.FetchedBytes), sum.ZeroChunks, humanBytes(sum.ZeroBytes), zeroWords[sum.ZeroRanges], sum.DedupHits, sum.Direct)
		if sum.Layout != "" {
			fmt.Fprintf(stdout, "  bucket layout: %s, %d fetchers, %d retries\n", sum.Layout, sum.Fetchers, sum.Retries)
		}
		if q := sum.Requests; q != nil && (q.Throttled > 0 || q.Stalls > 0 || q.LimitDecreases > 0) {
			fmt.Fprintf(stdout, "  bucket requests: %d throttled, %d stalled (--io-timeout); GETs in flight lowered %d times (to %d), raised %d times (now %d)\n",
				q.Throttled, q.Stalls, q.LimitDecreases, q.MinLimit, q.LimitIncreases, q.Limit)
		}
		printStores(stdout, sum.Stores)
		if len(sum.DamagedRanges) > 0 {
			var n uint64
			for _, r := range sum.DamagedRanges {
				n += r.Length
			}
			fmt.Fprintf(stdout, "  RESTORED WITH DAMAGE: %d chunk(s) missing or damaged in every store, %s written as zeros at:\n", sum.DamagedChunks, humanBytes(n))
			for _, r := range sum.DamagedRanges {
				fmt.Fprintf(stdout, "    [%d,%d)\n", r.Offset, r.Offset+r.Length)
			}
		}
		return damaged
	}
}

// printStores prints what each store of several --store contributed.
func printStores(w io.Writer, stores []chunkstore.MemberStats) {
	for i, m := range stores {
		fmt.Fprintf(w, "  store %d %s: %d chunks (%s)", i+1, index.DisplayText(m.Store), m.Chunks, humanBytes(uint64(m.Bytes)))
		if m.Missing > 0 || m.Damaged > 0 {
			fmt.Fprintf(w, "; fell through for %d missing and %d damaged copies", m.Missing, m.Damaged)
		}
		fmt.Fprintln(w)
	}
}

// run restores archive of snapshot ref to targetPath and returns its
// summary. Blob archives are written whole (allowBlob) and return nil.
// An error after SNAPSHOT was resolved is a resolvedError naming the
// snapshot.
func (rc *restoreCmd) run(ctx context.Context, ref, archive, targetPath string, allowBlob bool, stdout, stderr io.Writer) (_ *restored, err error) {
	sf, pf := &rc.sf, rc.pf
	start := time.Now()
	// Until the progress report starts, retries are said on their own.
	stopRetryLines := startRetryLines(stderr, sf.progress, "restore", &sf.retries)
	defer stopRetryLines()
	ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{cryptMode: *rc.cryptMode, requireSig: *rc.requireSig}, pf.fetchersFor(sf.fetchSpec()))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	snap, err := snapshot.Resolve(ctx, store, ns, ref)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = &resolvedError{snap: snap.String(), err: err}
		}
	}()
	src, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		return nil, err
	}
	m, cc := src.Manifest(), src.Key()
	if strings.HasSuffix(archive, ".blob") {
		if !allowBlob {
			return nil, usagef("%s is a blob: give a disk image archive (.img.fidx)", archive)
		}
		return nil, restoreBlob(ctx, store, snap, m, archive, targetPath, rc.targetOptions(0), cc, stdout, sf)
	}
	plan, fi, err := restore.LoadPlan(ctx, store, snap.Dir(), m, archive, cc)
	if err != nil {
		return nil, snapshot.Removed(ctx, store, snap, err)
	}
	hdr := journalHeader(snap, archive, fi, plan)
	jpath, err := restore.JournalPath(targetPath)
	if errors.Is(err, restore.ErrNoJournalPlace) {
		fmt.Fprintf(stderr, "pbsdirect: warning: %v: restoring without one (an interrupted restore cannot be resumed)\n", err)
		jpath, err = "", nil
	}
	if err != nil {
		return nil, err
	}
	var key *crypto.Config // the digests are keyed only for an encrypted archive
	if fi.CryptMode == index.CryptEncrypt {
		key = cc
	}
	rs, err := rc.openResume(ctx, jpath, hdr, plan, key, targetPath, allowBlob, stdout, stderr)
	if err != nil || rs.complete {
		return nil, err
	}
	journal, durable := rs.journal, rs.durable
	topts := rc.targetOptions(int64(plan.DataBytes()))
	topts.Reserve = plan.DataRanges()
	topts.Resume = rs.partial
	if journal == nil {
		// Once the target is ours: a device's sector size is checked
		// against the image's partition table, then an earlier
		// interrupted restore is refused (--resume continues it) or
		// started over (--restart).
		topts.Locked = func() error {
			if !rs.partial {
				if err := rc.checkSectorSize(ctx, store, plan, fi.CryptMode == index.CryptEncrypt, cc, targetPath, stderr); err != nil {
					return err
				}
			}
			return startOver(targetPath, jpath, *rc.restart || !rc.keepWork, stderr)
		}
	}
	target, err := restore.OpenTarget(targetPath, int64(plan.Size), topts)
	if err != nil {
		journal.Close()
		return nil, err
	}
	if journal == nil && jpath != "" {
		journal, err = restore.CreateJournal(jpath, hdr)
		if err != nil {
			fmt.Fprintf(stderr, "pbsdirect: warning: %v: restoring without a journal (an interrupted restore cannot be resumed)\n", err)
			journal = nil
		}
	}
	var stats restore.Stats
	opts := pf.options(sf.fetchSpec())
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = cc
	opts.Archive = path.Join(snap.Dir(), archive)
	opts.OnMissing, opts.OnCorrupt = rc.damage[0], rc.damage[1]
	opts.Journal = journal
	defer raiseProcs(opts)()
	// Progress counts data written: zero ranges take no time and would
	// only inflate the rate.
	stopRetryLines()
	bar := startProgressWatch(stderr, sf.progress, "restore", int64(plan.DataBytes()), func() int64 {
		return int64(stats.DataBytes.Load())
	}, &sf.retries)
	resumed := 0
	if durable != nil {
		// The journal says which chunks were written and synced; the
		// target's own bytes must say so too (a partial output changed
		// since, another device at the same path): they are read back
		// while the rest is fetched, and what they do not hold is fetched
		// after.
		resumed, err = restore.RunResume(ctx, store, plan, target, target.File(), durable, opts, &stats)
		if n := len(durable) - resumed; n > 0 && ctx.Err() == nil {
			fmt.Fprintf(stderr, "pbsdirect: note: %d chunk(s) the journal records are not on %s as written: they are fetched again\n", n, targetPath)
		}
	} else {
		err = restore.Run(ctx, store, plan, target, opts, &stats)
	}
	bar.done()
	var damage *restore.DamagedError
	if de := (*restore.DamagedError)(nil); errors.As(err, &de) && de.Zeroed {
		// Every other byte is restored, verified and synced.
		damage, err = de, nil
	}
	if err == nil {
		err = target.Commit()
	}
	if err != nil {
		keep := rc.keepWork || chunkstore.Outside(err) || ctx.Err() != nil
		if n := journal.Recorded(); n > 0 && keep && !errors.Is(err, restore.ErrTargetExists) {
			// Keep what is durable: --resume fetches only the rest. (Not
			// when another program took the target's name meanwhile.)
			partial := target.PartialPath()
			target.KeepPartial()
			journal.Close()
			target.Close(true)
			return nil, &stoppedError{archive: opts.Archive, target: targetPath, partial: partial, journal: journal.Path(),
				durable: n, total: len(plan.Chunks), err: err}
		}
		partial := target.Partial()
		journal.Remove()
		target.Close(true)
		return nil, restoreFailed(opts.Archive, targetPath, partial, err)
	}
	// A --resume run (a retry loop's) records its completion, so that the
	// next --resume knows; other runs leave nothing beside the target.
	if id, ierr := restore.TargetIdentity(target.File()); ierr == nil && damage == nil && rc.keepWork && *rc.resume {
		id.Finished = time.Now().UTC()
		if cerr := journal.Complete(hdr, id); cerr != nil {
			fmt.Fprintf(stderr, "pbsdirect: warning: %v: a later --resume will not know the restore completed\n", cerr)
		}
	} else {
		journal.Remove()
	}
	el := time.Since(start) - keys.OpeningTime() // the clock runs from the key opened
	r := &restored{plan: plan, created: target.Created(), target: target, damage: damage}
	if opts.Encrypted {
		r.key = cc
	}
	r.summary = restoreSummary{
		Snapshot: snap.String(), Archive: archive, Target: targetPath, Size: plan.Size,
		DataBytes: stats.DataBytes.Load(), ZeroBytes: stats.ZeroBytes.Load(), FetchedBytes: stats.FetchedBytes.Load(),
		ChunksFetched: stats.Fetched.Load(), ZeroChunks: plan.ZeroBytes / max(plan.ChunkSize, 1), DedupHits: stats.DedupHits.Load(),
		Seconds: el.Seconds(), MiBps: restore.MiBps(plan.Size, el), DataMiBps: restore.MiBps(stats.DataBytes.Load(), el),
		Direct: target.Direct(), Encrypted: opts.Encrypted, Jobs: opts.Jobs, Writers: opts.Writers, Fetchers: opts.Fetchers,
		Layout: storeLayout(store), Retries: backends.RetriesOf(store), ZeroRanges: target.ZeroHandling(),
	}
	if r.summary.Layout != "" {
		q := backends.PolicyStatsOf(store)
		r.summary.Requests = &q
	}
	r.summary.Stores = storeCounts(store)
	r.summary.ResumedChunks = resumed
	if damage != nil {
		r.summary.DamagedRanges = damage.Ranges()
		r.summary.DamagedChunks = len(damage.Chunks)
		r.summary.ExitCode = exitData
	}
	return r, nil
}

// journalHeader names what a restore's journal belongs to.
func journalHeader(snap index.Snapshot, archive string, fi *index.FileInfo, plan *restore.Plan) restore.JournalHeader {
	return restore.JournalHeader{Snapshot: snap.String(), Archive: archive, IndexCsum: hex.EncodeToString(fi.Csum[:]), Size: plan.Size}
}

// startOver runs, with the target locked and before anything in it
// changes, when a restore starts without --resume. An earlier interrupted
// restore whose journal records durable chunks is refused (a usage error
// naming --resume and --restart) unless restart is set; then, or when
// there is nothing worth resuming, its journal (or the record of a
// completed restore) is discarded and what it left is said.
func startOver(targetPath, jpath string, restart bool, stderr io.Writer) error {
	if jpath == "" {
		return nil
	}
	h, done, jerr := restore.ReadJournal(jpath)
	_, complete, _ := restore.ReadCompletion(jpath)
	// This run's own partial output is there already, empty: only one
	// with content is an earlier restore's.
	pst, perr := os.Lstat(restore.PartialPath(targetPath))
	if perr == nil && pst.Size() == 0 {
		perr = os.ErrNotExist
	}
	if st, err := os.Stat(targetPath); err == nil && st.Mode()&os.ModeDevice != 0 {
		perr = nil // a device holds what was written to it
	}
	switch {
	case jerr == nil && complete == nil && len(done) > 0 && perr == nil && !restart:
		return usagef("%s: an earlier restore of %s %s stopped and left %d durable chunks (journal %s): give --resume to continue it (fetching only the rest), or --restart to start over and discard them",
			targetPath, h.Snapshot, h.Archive, len(done), jpath)
	case jerr == nil && complete == nil && len(done) > 0 && perr == nil:
		fmt.Fprintf(stderr, "pbsdirect: note: --restart: the %d durable chunks an interrupted restore of %s %s to %s left are discarded\n",
			len(done), h.Snapshot, h.Archive, targetPath)
	case perr == nil && !restore.IsDevice(targetPath):
		fmt.Fprintf(stderr, "pbsdirect: note: an earlier restore to %s left a partial output with nothing journaled to resume: starting over, it is discarded\n", targetPath)
	}
	return restore.RemoveJournal(jpath)
}

// resumeState is what --resume found to continue.
type resumeState struct {
	journal  *restore.Journal       // the journal to append to; nil: a new one is created
	durable  map[crypto.Digest]bool // chunks to check on the target and not fetch again
	partial  bool                   // a new file's partial output is continued (TargetOptions.Resume)
	complete bool                   // the target is complete already: nothing to do
}

// openResume finds what --resume continues: the journal at jpath of the
// interrupted restore (refusing one of another snapshot, archive or index)
// and the chunks it records as durable, which the caller checks on the
// target while the rest is fetched (restore.RunResume). With
// nothing to resume (no journal, no partial output, or no place for a
// journal) the restore starts from the beginning, which is said on stderr.
// A journal that records a completed restore is checked against the
// target: a file still the one it left (device, inode, size, modification
// time) is complete (said on stdout, with allowComplete: the restore
// command, not drill; exit 0); for a block device every data chunk is read
// back and only what does not match is fetched again. An existing file at
// targetPath that no record says is this restore's (a run without
// --resume leaves none, or the file changed since) is read back against
// the image (keyed with key for an encrypted archive): whole, it is
// complete; otherwise --resume is refused without --force
// (resumeOverFile). Without --resume it returns the zero resumeState.
func (rc *restoreCmd) openResume(ctx context.Context, jpath string, hdr restore.JournalHeader, plan *restore.Plan, key *crypto.Config, targetPath string, allowComplete bool, stdout, stderr io.Writer) (resumeState, error) {
	if !*rc.resume {
		return resumeState{}, nil
	}
	fresh := func(why string) (resumeState, error) {
		fmt.Fprintf(stderr, "pbsdirect: note: --resume: nothing to resume (%s): the restore starts from the beginning\n", why)
		if jpath != "" {
			restore.RemoveJournal(jpath)
		}
		return resumeState{}, nil
	}
	if jpath == "" {
		return fresh("no place for a journal")
	}
	// An existing file no record vouches for: only its bytes can say.
	st, serr := os.Lstat(targetPath)
	overFile := serr == nil && st.Mode().IsRegular() && !*rc.force
	h, complete, err := restore.ReadCompletion(jpath)
	switch {
	case errors.Is(err, os.ErrNotExist) && overFile && allowComplete:
		// Restored by a run without --resume (which leaves no record),
		// or another file.
		return rc.resumeOverFile(ctx, "no journal records its restore", hdr, plan, key, targetPath, stdout, stderr)
	case errors.Is(err, os.ErrNotExist) && overFile:
		return resumeState{}, usagef("--resume: %s exists and no journal (%s) records its restore: a run without --resume leaves no record, so it may be complete; give --force to restore over it", targetPath, jpath)
	case errors.Is(err, os.ErrNotExist):
		return fresh("no journal " + jpath)
	case err != nil:
		return resumeState{}, err
	}
	if h != hdr && complete != nil {
		if overFile && allowComplete {
			return rc.resumeOverFile(ctx, fmt.Sprintf("its journal records a completed restore of %s %s, not of this one", h.Snapshot, h.Archive),
				hdr, plan, key, targetPath, stdout, stderr)
		}
		return fresh(fmt.Sprintf("the journal records a completed restore of %s %s, not of this one", h.Snapshot, h.Archive))
	}
	device := restore.IsDevice(targetPath)
	if complete != nil {
		if !device {
			st, err := os.Stat(targetPath)
			if err == nil && st.Mode().IsRegular() {
				f, oerr := os.Open(targetPath)
				if oerr == nil {
					id, ierr := restore.TargetIdentity(f)
					f.Close()
					if ierr == nil && id.Same(*complete) && allowComplete {
						return rc.sayComplete(stdout, hdr, plan, targetPath, fmt.Sprintf("%s is complete: the restore of %s/%s to it finished at %s and the file is unchanged since; nothing to do",
							targetPath, hdr.Snapshot, hdr.Archive, complete.Finished.Format(time.RFC3339)))
					}
				}
			}
			if overFile && allowComplete {
				return rc.resumeOverFile(ctx, fmt.Sprintf("it changed since the restore to it completed at %s", complete.Finished.Format(time.RFC3339)),
					hdr, plan, key, targetPath, stdout, stderr)
			}
			return fresh(fmt.Sprintf("the restore to %s completed at %s, but the file there is not the one it left", targetPath, complete.Finished.Format(time.RFC3339)))
		}
		j, err := restore.ResumeJournal(jpath, hdr)
		if err != nil {
			return resumeState{}, err
		}
		all := make(map[crypto.Digest]bool, len(plan.Chunks))
		for i := range plan.Chunks {
			all[plan.Chunks[i].Digest] = true
		}
		fmt.Fprintf(stderr, "pbsdirect: note: --resume: the restore of %s %s to %s completed at %s: reading its data back, fetching only what no longer matches\n",
			hdr.Snapshot, hdr.Archive, targetPath, complete.Finished.Format(time.RFC3339))
		return resumeState{journal: j, durable: all}, nil
	}
	if !device {
		if _, err := os.Lstat(targetPath); errors.Is(err, os.ErrNotExist) {
			pst, err := os.Lstat(restore.PartialPath(targetPath))
			switch {
			case errors.Is(err, os.ErrNotExist):
				return fresh("no partial output " + restore.PartialPath(targetPath))
			case err == nil && pst.Mode().IsRegular() && pst.Size() != int64(plan.Size):
				// Stopped before the partial output had the image's size:
				// nothing in it was journaled either.
				return fresh("the partial output " + restore.PartialPath(targetPath) + " is not of the image's size")
			}
		}
	}
	j, err := restore.ResumeJournal(jpath, hdr)
	switch {
	case errors.Is(err, restore.ErrJournalMismatch):
		return resumeState{}, usagef("--resume refused for %s: %v; or --restart to start over", targetPath, err)
	case err != nil:
		return resumeState{}, err
	}
	_, err = os.Lstat(targetPath)
	return resumeState{journal: j, durable: j.Done(), partial: !device && err != nil}, nil
}

// resumeOverFile answers --resume over targetPath, an existing regular file
// that no completion record vouches for (why says what was found): every
// chunk position of plan is read back from it and checked against the
// index (keyed with key for an encrypted archive), and every zero range
// must read as zeros (restore.CheckFile, restore.DurableReaders readers).
// A file that holds the image whole is complete: said on stdout, nothing
// written (exit 0). Otherwise --resume is refused (a usage error, exit 2)
// naming how many chunks differ and --force: a file is never written to
// without the user asking to overwrite it. An error reading it is returned.
func (rc *restoreCmd) resumeOverFile(ctx context.Context, why string, hdr restore.JournalHeader, plan *restore.Plan, key *crypto.Config, targetPath string, stdout, stderr io.Writer) (resumeState, error) {
	fmt.Fprintf(stderr, "pbsdirect: note: --resume: %s exists and %s: reading it back to check it against %s %s (%d chunks)\n",
		targetPath, why, hdr.Snapshot, hdr.Archive, len(plan.Chunks)+int(plan.DedupHits()))
	chk, err := restore.CheckFile(ctx, targetPath, plan, key, restore.DurableReaders)
	if err != nil {
		return resumeState{}, fmt.Errorf("--resume: read back %s: %w", targetPath, err)
	}
	if chk.Whole(plan) {
		return rc.sayComplete(stdout, hdr, plan, targetPath, fmt.Sprintf("%s holds %s %s whole, checked %d chunks: nothing to do",
			targetPath, hdr.Snapshot, hdr.Archive, chk.Chunks))
	}
	const how = "give --force to restore over it (or another TARGET)"
	if chk.Size != int64(plan.Size) {
		return resumeState{}, usagef("--resume: %s exists and does not hold %s %s: it is %d bytes, the image %d; %s",
			targetPath, hdr.Snapshot, hdr.Archive, chk.Size, plan.Size, how)
	}
	var what []string
	if chk.Differ > 0 {
		what = append(what, fmt.Sprintf("%d of %d chunks differ from the index", chk.Differ, chk.Chunks))
	}
	if chk.NotZero > 0 {
		what = append(what, "zero ranges do not read as zeros")
	}
	return resumeState{}, usagef("--resume: %s exists and does not hold %s %s whole: %s (%v); %s",
		targetPath, hdr.Snapshot, hdr.Archive, strings.Join(what, ", "), chk.Mismatch, how)
}

// sayComplete reports a target found complete by --resume: line on stdout
// in text, the summary (nothing fetched, every chunk resumed) in JSON.
func (rc *restoreCmd) sayComplete(stdout io.Writer, hdr restore.JournalHeader, plan *restore.Plan, targetPath, line string) (resumeState, error) {
	if rc.sf.json() {
		return resumeState{complete: true}, writeJSON(stdout, restoreSummary{Snapshot: hdr.Snapshot, Archive: hdr.Archive, Target: targetPath,
			Size: plan.Size, ResumedChunks: len(plan.Chunks)})
	}
	fmt.Fprintln(stdout, line)
	return resumeState{complete: true}, nil
}

// targetOptions are the target flags, with the image's data bytes for the
// free-space check and a directory store to keep targets out of.
func (rc *restoreCmd) targetOptions(dataBytes int64) restore.TargetOptions {
	o := restore.TargetOptions{Force: *rc.force, AssumeZeroed: *rc.assumeZeroed, NoDirect: *rc.noDirect,
		FollowSymlinks: *rc.follow, DataBytes: dataBytes}
	if !strings.Contains(rc.sf.store, "://") {
		o.StoreDir = rc.sf.store // never write into the datastore being read
	}
	return o
}

// restoreFailed says what a failed restore left: an existing target that
// was written to now holds a partial image; a new file was removed.
func restoreFailed(archive, targetPath string, partial bool, err error) error {
	if partial {
		return &partialError{archive: archive, target: targetPath, err: err}
	}
	return fmt.Errorf("restore of %s to %s failed, nothing was kept: %w", archive, targetPath, err)
}

// stoppedError is a restore that stopped (any cause: damage, the store,
// the target, an interruption) with chunks durable on the target and
// recorded in its journal: both are kept, for --resume.
type stoppedError struct {
	archive, target string
	partial         string // a new file's partial output; "" for an existing file or a device
	journal         string
	durable, total  int
	err             error
}

// Error says what was kept, where, and how to continue.
func (e *stoppedError) Error() string {
	kept := e.target + " now holds a partial image, not a usable disk"
	if e.partial != "" {
		kept = "partial output " + e.partial
	}
	how := "once the cause is fixed (the store reachable again, credentials refreshed, space freed)"
	var de *restore.DamagedError
	var ce *restore.ChunkError
	if !chunkstore.Outside(e.err) && (errors.As(e.err, &de) || errors.As(e.err, &ce)) {
		how = "with another --store that holds the missing or damaged chunks, or with --on-missing zero / --on-corrupt zero to write zeros for them"
	}
	return fmt.Sprintf("restore of %s to %s stopped: %d of %d chunks are durable and kept (%s, journal %s); run the same restore with --resume to fetch only the rest, %s: %v",
		e.archive, e.target, e.durable, e.total, kept, e.journal, how, e.err)
}

// Unwrap returns the cause.
func (e *stoppedError) Unwrap() error { return e.err }

// partialError is a restore that failed (or was interrupted) after it
// changed an existing target: the target now holds a partial image.
type partialError struct {
	archive, target string
	err             error
}

// words says what the target holds now.
func (e *partialError) words() string {
	return fmt.Sprintf("%s now holds a partial image, not a usable disk (restore again to repair it)", e.target)
}

// Error says that the restore failed after writing started, what the
// target holds now, and why.
func (e *partialError) Error() string {
	return fmt.Sprintf("restore of %s to %s failed after writing started: %s: %v", e.archive, e.target, e.words(), e.err)
}

// Unwrap returns the cause.
func (e *partialError) Unwrap() error { return e.err }

// zeroWords explains restoreSummary.ZeroRanges in the text summary.
var zeroWords = map[string]string{
	"holes":   "left as holes",
	"punched": "holes punched",
	"zeroed":  "zeroed on the device",
	"skipped": "skipped, device assumed zeroed",
}

// restoreBlob writes the decoded blob archive to targetPath.
func restoreBlob(ctx context.Context, store chunkstore.Store, snap index.Snapshot, m *index.Manifest, archive, targetPath string, topts restore.TargetOptions, cc *crypto.Config, stdout io.Writer, sf *storeFlags) error {
	data, err := snapshot.ReadBlob(ctx, store, snap, m, archive, cc)
	if err != nil {
		return err
	}
	if err := restore.WriteFile(targetPath, data, topts); err != nil {
		return err
	}
	if sf.json() {
		return writeJSON(stdout, map[string]any{"snapshot": snap.String(), "archive": archive, "target": targetPath, "size": len(data)})
	}
	fmt.Fprintf(stdout, "restored %s/%s to %s: %s, verified and synced\n", snap.String(), index.DisplayText(archive), index.DisplayText(targetPath), humanBytes(uint64(len(data))))
	return nil
}

// humanBytes formats n bytes with a binary unit.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// resolvedError is a restore's error once SNAPSHOT (TYPE/ID) was resolved:
// it carries the snapshot for reports (drill) and says what err says.
type resolvedError struct {
	snap string // TYPE/ID/TIME
	err  error
}

// Error is the error's own message.
func (e *resolvedError) Error() string { return e.err.Error() }

// Unwrap returns the error.
func (e *resolvedError) Unwrap() error { return e.err }

// restoreCommand is 'pbsdirect restore'.
func restoreCommand() commandSpec {
	return commandSpec{
		use:   "restore [flags] SNAPSHOT ARCHIVE TARGET",
		short: "restore a disk image (or blob) to a file or block device (- for standard output)",
		long: `Restore one archive of a snapshot: a disk image (.img.fidx) to a file, a block
device or - (standard output), or a blob (.blob: a VM config, the client log).
Every chunk is checked (CRC, digest; AES-GCM with --keyfile) before its bytes
are written; the target is synced before success is reported.

SNAPSHOT is TYPE/ID/TIME (vm/100/2026-11-29T10:00:00Z) or TYPE/ID for the
group's latest; ARCHIVE is drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx.
TARGET is a new file (an existing one needs --force), a block device, or -.

A restore that stops (interrupted, store unreachable or throttled past
--retry-for, expired credentials, a missing or damaged chunk) keeps its partial
output and journal: run it again with --resume to fetch only the rest (with
--on-missing zero / --on-corrupt zero or another --store for damage). A run
without --resume over such a restore is refused; --restart starts over.
--resume over an existing file (a finished restore, with or without
--resume) reads it back against the index: whole, it exits 0 and writes
nothing; otherwise it is refused, naming the chunks that differ and --force.

Environment: PBSDIRECT_STORE (--store), PBS_NAMESPACE (--ns),
PBS_ENCRYPTION_PASSWORD, PBS_ENCRYPTION_PASSWORD_FILE, PBS_ENCRYPTION_PASSWORD_FD
(key passphrase), PROXMOX_OUTPUT_FORMAT (--output-format), AWS_* for s3://.`,
		example: `  pbsdirect restore --store /mnt/datastore/store1 vm/100 drive-scsi0 /var/tmp/vm100.raw
  pbsdirect restore --store s3://backups/pbs --keyfile enc.key vm/100/2026-11-29T10:00:00Z drive-scsi0 /dev/vg0/vm-100-disk-0
  pbsdirect restore --store /mnt/ds vm/100 qemu-server.conf -`,
		build:    cmdRestore,
		complete: completeSnapshotArchive,
	}
}
