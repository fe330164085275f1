package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

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
	px         *pxarFlags        // pxar extraction (restorepxar.go); nil for drill
	delta      *deltaFlags       // --base, --in-place (delta.go); nil for drill
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
	rc.sf.rate.register(fs)
	rc.force = fs.Bool("force", false, "overwrite an existing regular file (zero ranges are punched so it matches the image exactly), or a block device holding a file system, partition table, LVM, RAID or other signature; write an image whose GPT is for another sector size than the device's (with a warning)")
	rc.assumeZeroed = fs.Bool("assume-zeroed", false, "the target block device already reads as zeros: skip zeroing zero ranges (refused on a device holding a signature)")
	rc.noDirect = fs.Bool("no-direct", false, "do not use O_DIRECT for the target")
	rc.resume = fs.Bool("resume", false, "continue a stopped restore of the same snapshot, archive and target, fetching no chunk its journal records as durable and the target still holds (the journal is beside the partial output; for a block device in $XDG_CACHE_HOME/pbsdirect, $HOME/.cache/pbsdirect, /var/cache/pbsdirect, /var/tmp or /tmp); with nothing to resume the restore starts (a stopped restore of another snapshot is refused, naming it and --restart; one over an existing file with --force is continued with --resume --force); over an existing file no completion record vouches for (restored without --resume) every chunk is read back and checked: whole, it exits 0 writing nothing, else it is refused naming --force; a block device no journal records is read back too: whole, it exits 0 writing nothing, else the restore starts")
	rc.restart = fs.Bool("restart", false, "start over an interrupted restore to TARGET, discarding its partial output and journal (without --restart or --resume such a restore is refused)")
	rc.cryptMode = registerCryptMode(fs)
	rc.follow = fs.Bool("follow-symlinks", false, "write through a symbolic link at TARGET to the file it names (links to block devices are always followed)")
	rc.requireSig = registerRequireSignature(fs)
	return rc
}

// checkFlags validates the store, pipeline and resume flags that restore
// and restore-guest share; errors are usage errors.
func (rc *restoreCmd) checkFlags() error {
	if err := rc.sf.check(); err != nil {
		return err
	}
	if err := rc.pf.check(); err != nil {
		return err
	}
	if *rc.resume && *rc.restart {
		return usagef("--resume continues an interrupted restore, --restart discards it: give one")
	}
	if rc.delta != nil {
		if err := rc.delta.check(*rc.resume); err != nil {
			return err
		}
		if rc.delta.active() {
			*rc.force = true // the target holds an older copy: written over
		}
	}
	return nil
}

// check validates the parsed flags and the three arguments.
func (rc *restoreCmd) check(fs *flag.FlagSet) error {
	if fs.NArg() != 3 {
		return usagef("want SNAPSHOT ARCHIVE TARGET, got %d argument(s)", fs.NArg())
	}
	if err := rc.checkFlags(); err != nil {
		return err
	}
	if rc.delta.active() && (fs.Arg(2) == "-" || archive.IsPxar(fs.Arg(1))) {
		return usagef("--base and --in-place restore a disk image into a file or block device that holds an older copy")
	}
	if fs.Arg(2) == "-" && !rc.stdoutOK {
		return usagef("a drill restores to a file or block device, not to standard output")
	}
	if dry := fs.Lookup("dry-run"); dry != nil && dry.Value.String() == "true" {
		// A dry run writes no archive: standard output carries its
		// report alone.
		return checkSnapshotRef(fs.Arg(0))
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

// restored is what run did: the snapshot once SNAPSHOT was resolved
// (also when the restore then failed), the restore's (or drill's) result
// and its time to restore.
type restored struct {
	snap  string               // TYPE/ID/TIME; "" until resolved
	res   *restore.Result      // nil unless an image was restored
	drill *restore.DrillResult // a drill's, when run drilled
	// took runs from the store opened to the target committed, less the
	// time opening the key took (a KDF or a prompt is no restore time).
	took time.Duration
	// leftOut are the stores of the chain the restore could not read
	// (storesLeftOut), for the summary's stores-left-out.
	leftOut []string
}

func cmdRestore(fs *flag.FlagSet) commandFunc {
	rc := registerRestoreFlags(fs)
	rc.registerDamageFlags(fs)
	rf := registerRestoreFormat(fs)
	rc.registerPxarFlags(fs, true)
	rc.delta = registerDeltaFlags(fs)
	dry := registerDryRunFlags(fs)
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
		if err := rc.parseDamage(); err != nil {
			return err
		}
		if handled, err := rc.dryRun(ctx, fs, dry, "restore", stdout, stderr); handled {
			return err
		}
		if handled, err := rf.dispatch(ctx, rc, fs, stdout, stderr); handled {
			return err
		}
		if archive.IsPxar(fs.Arg(1)) && fs.Arg(2) != "-" && !fs.Changed("format") {
			return rc.restorePxar(ctx, fs.Arg(0), fs.Arg(1), fs.Arg(2), stdout, stderr)
		}
		if fs.Arg(2) == "-" {
			return rc.restoreToStdout(ctx, fs.Arg(0), index.NormalizeArchiveName(fs.Arg(1)), stdout, stderr)
		}
		r, err := rc.run(ctx, fs.Arg(0), index.NormalizeArchiveName(fs.Arg(1)), fs.Arg(2), nil, stdout, stderr)
		if err != nil {
			if jerr := limitOnFailure(stdout, rc.sf.rate.limiter); jerr != nil {
				return errors.Join(err, jerr)
			}
			return err
		}
		if r.res == nil {
			return nil
		}
		if err := r.res.Target.Close(false); err != nil {
			return err
		}
		sum := r.res.Summary(r.took)
		sum.StoresLeftOut = r.leftOut
		var damaged error
		if r.res.Damage != nil {
			damaged = r.res.Damage // it says "restored with damage"
			sum.ExitCode = exitData
		}
		if rc.sf.json() {
			if err := writeJSON(stdout, sum); err != nil {
				return err
			}
			return damaged
		}
		rate := fmt.Sprintf("%.1f MiB/s; %s data at %.1f MiB/s", sum.MiBps, humanBytes(sum.DataBytes), sum.DataMiBps)
		if sum.ChunksFetched == 0 && sum.DataBytes == 0 {
			rate = "nothing to fetch"
		}
		fmt.Fprintf(stdout, "restored %s/%s to %s: %s in %.2fs (%s)\n",
			index.DisplayText(sum.Snapshot), index.DisplayText(sum.Archive), index.DisplayText(sum.Target), humanBytes(sum.Size), sum.Seconds, rate)
		if sum.ResumedChunks > 0 {
			fmt.Fprintf(stdout, "  resumed: %d chunks already on the target (made durable by the stopped restore, not fetched again)\n", sum.ResumedChunks)
		}
		fmt.Fprintf(stdout, "  %s, zero chunks not fetched: %d (%s, %s), dedup hits: %d, O_DIRECT: %v, verified and synced\n",
			fetchedWords(sum), sum.ZeroChunks, zeroBytesWords(&sum), zeroWords[sum.ZeroRanges], sum.DedupHits, sum.Direct)
		if sum.Layout != "" {
			fmt.Fprintf(stdout, "  bucket layout: %s, %d fetchers, %d retries\n", sum.Layout, sum.Fetchers, sum.Retries)
		}
		printConnections(stdout, sum.Requests)
		if q := sum.Requests; q != nil && (q.Throttled > 0 || q.Stalls > 0 || q.LimitDecreases > 0) {
			fmt.Fprintf(stdout, "  bucket requests: %d throttled, %d stalled (--io-timeout); GETs in flight lowered %d times (to %d), raised %d times (now %d)\n",
				q.Throttled, q.Stalls, q.LimitDecreases, q.MinLimit, q.LimitIncreases, q.Limit)
		}
		printDelta(stdout, sum.Delta)
		printStores(stdout, sum.Stores)
		writeLimitLine(stdout, "  ", sum.RateLimit)
		printSalvaged(stdout, sum)
		if len(sum.DamagedRanges) > 0 {
			fmt.Fprintf(stdout, "  RESTORED WITH DAMAGE: %d chunk(s) missing or damaged in every store, %s written as zeros at:\n", sum.DamagedChunks, humanBytes(sum.DamagedBytes()))
			for _, r := range sum.DamagedRanges {
				fmt.Fprintf(stdout, "    [%d,%d)\n", r.Offset, r.Offset+r.Length)
			}
		}
		return damaged
	}
}

// fetchedWords says how many chunks sum fetched and verified and the
// encoded bytes read from the store, which also count the copies that
// failed their check (damaged chunks, copies a chain fell through).
func fetchedWords(sum restore.Summary) string {
	failed := sum.DamagedChunks > 0
	for _, m := range sum.Stores {
		failed = failed || m.Damaged > 0
	}
	if failed {
		return fmt.Sprintf("chunks fetched and verified: %d (%s encoded read from the store, the copies that failed their check included)", sum.ChunksFetched, humanBytes(sum.FetchedBytes))
	}
	return fmt.Sprintf("chunks fetched: %d (%s encoded)", sum.ChunksFetched, humanBytes(sum.FetchedBytes))
}

// printSalvaged says which chunks sum recovered from .bad copies, one line
// each (those listed), and how many there were.
func printSalvaged(w io.Writer, sum restore.Summary) {
	if sum.SalvagedChunks == 0 {
		return
	}
	fmt.Fprintf(w, "  %d chunk(s) missing or damaged in every store, intact in a .bad copy (PBS does not read these: `pbsdirect verify` lists them, `pbsdirect repair --store STORE` or renaming mends the store):\n", sum.SalvagedChunks)
	for _, c := range sum.Salvaged {
		fmt.Fprintf(w, "    chunk %s recovered from a .bad copy: %s\n", index.DisplayText(c.Digest), index.DisplayText(c.Copy))
	}
	if n := sum.SalvagedChunks - len(sum.Salvaged); n > 0 {
		fmt.Fprintf(w, "    … and %d more\n", n)
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
		printFellThrough(w, m)
	}
}

// run restores archive of snapshot ref to targetPath: through
// restore.Restore, or with drill through restore.Drill given those options
// (a blob is then refused). A blob archive is written whole (restoreBlob)
// and leaves no Result, as does a --resume that finds the target complete
// (said here, Result.Summary in JSON). The result is nil only when the
// error came before SNAPSHOT was resolved.
func (rc *restoreCmd) run(ctx context.Context, ref, archive, targetPath string, drill *restore.DrillOptions, stdout, stderr io.Writer) (_ *restored, err error) {
	sf, pf := &rc.sf, rc.pf
	// A target another run holds is refused at once, before the store is
	// opened or listed (which can take long with a store that stalls);
	// Open takes the lock for the run.
	probe := rc.targetOptions(0)
	probe.Resume = *rc.resume
	if err := filetarget.CheckNotBusy(targetPath, probe); err != nil {
		return nil, err
	}
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
	r := &restored{snap: snap.String()}
	src, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		return r, err
	}
	if strings.HasSuffix(archive, ".blob") {
		if drill != nil {
			return r, usagef("%s is a blob: give a disk image archive (.img.fidx)", archive)
		}
		return r, rc.restoreBlob(ctx, src, archive, targetPath, stdout)
	}
	opts := pf.options(sf.fetchSpec())
	opts.OnMissing, opts.OnCorrupt = rc.damage[0], rc.damage[1]
	opts.RateLimit = sf.rate.limiter
	defer raiseProcs(opts)()
	sink := &filetarget.Sink{Path: targetPath, Options: rc.targetOptions(0)}
	ro := restore.RestoreOptions{
		Pipeline: opts, Resume: *rc.resume, Restart: *rc.restart, KeepWork: rc.keepWork,
		Note: func(msg string) { fmt.Fprintf(stderr, "pbsdirect: %s\n", msg) },
		Progress: func(total int64, done func() int64) func() {
			stopRetryLines()
			return startProgressWatch(stderr, sf.progress, "restore", total, done, &sf.retries).done
		},
	}
	if ro.Delta, err = rc.delta.options(ctx, store, ns, keys, []restore.Sink{sink}, stderr); err != nil {
		return r, err
	}
	if drill != nil {
		drill.Restore = ro
		r.drill, err = restore.Drill(ctx, src, archive, sink, *drill)
		r.res, r.took = r.drill.Restore, r.drill.Restored.Sub(start)-keys.OpeningTime()
	} else {
		r.res, err = restore.Restore(ctx, src, archive, sink, ro)
		r.took = time.Since(start) - keys.OpeningTime()
	}
	r.leftOut = storesLeftOut(sf, store)
	if errors.Is(err, restore.ErrRefused) {
		return r, usagef("%s", err.Error()) // the command line must change (exit 2)
	}
	if err != nil || r.res.Complete == "" {
		return r, err
	}
	res := r.res
	r.res = nil
	if rc.sf.json() {
		sum := res.Summary(0)
		sum.StoresLeftOut = r.leftOut
		return r, writeJSON(stdout, sum)
	}
	fmt.Fprintln(stdout, res.Complete)
	return r, nil
}

// targetOptions are the target flags, with the image's data bytes for the
// free-space check and a directory store to keep targets out of.
func (rc *restoreCmd) targetOptions(dataBytes int64) filetarget.Options {
	o := filetarget.Options{Force: *rc.force, AssumeZeroed: *rc.assumeZeroed, NoDirect: *rc.noDirect,
		FollowSymlinks: *rc.follow, DataBytes: dataBytes}
	if !strings.Contains(rc.sf.store, "://") {
		o.StoreDir = rc.sf.store // never write into the datastore being read
	}
	return o
}

// zeroWords explains restore.Summary.ZeroRanges in the text summary.
var zeroWords = map[string]string{
	"holes":   "left as holes",
	"punched": "holes punched",
	"zeroed":  "zeroed on the device",
	"skipped": "skipped, device assumed zeroed",
}

// restoreBlob writes the decoded blob archive of src to targetPath.
func (rc *restoreCmd) restoreBlob(ctx context.Context, src *snapshot.Reader, archive, targetPath string, stdout io.Writer) error {
	data, err := src.Blob(ctx, archive)
	if err != nil {
		return err
	}
	if err := filetarget.WriteFile(targetPath, data, rc.targetOptions(0)); err != nil {
		return err
	}
	if rc.sf.json() {
		return writeJSON(stdout, map[string]any{"snapshot": src.Snapshot().String(), "archive": archive, "target": targetPath, "size": len(data)})
	}
	fmt.Fprintf(stdout, "restored %s/%s to %s: %s, verified and synced\n", src.Snapshot().String(), index.DisplayText(archive), index.DisplayText(targetPath), humanBytes(uint64(len(data))))
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
A pxar archive (root.pxar of a ct/ or host/ snapshot, legacy or split) is
extracted into the directory TARGET (empty or absent; --force merges) with
owners, modes, times, xattrs, ACLs and capabilities, never writing outside
it; --include PATH extracts parts, --map-ids shifts ids for an unprivileged
container. An extraction that stops is not resumed (--resume and --restart
are for disk images): run it again with --force.

A disk image restore that stops (interrupted, store unreachable or throttled
past --retry-for, expired credentials, a missing or damaged chunk) keeps its
partial output and journal: run it again with --resume to fetch only the rest
(with --on-missing zero / --on-corrupt zero or another --store for damage; with
--force too when it was writing over an existing file). A run without --resume
over such a restore is refused; --restart starts over. --resume TYPE/ID after a
newer snapshot appeared is refused, naming the stopped one. --resume over an
existing file (a finished restore, with or without --resume) reads it back
against the index: whole, it exits 0 and writes nothing; otherwise it is
refused, naming the chunks that differ and --force.

Restoring again onto a target that holds an older copy: --base SNAPSHOT
(or auto, the snapshot pbsdirect recorded restoring into it) fetches and
writes only the positions whose digest changed; a base the target's record
does not vouch for is refused unless --verify-base, which reads the target
back and skips only what matches. --in-place reads and hashes every range of
the target and writes only what differs. --dry-run fetches no chunk and says
what the run would fetch, how long it would take and what it would cost.

Environment: PBSDIRECT_STORE (--store), PBS_NAMESPACE (--ns),
PBS_ENCRYPTION_PASSWORD, PBS_ENCRYPTION_PASSWORD_FILE,
PBS_ENCRYPTION_PASSWORD_FD (key passphrase), PROXMOX_OUTPUT_FORMAT
(--output-format), AWS_* for s3://.`,
		example: `  pbsdirect restore --store /mnt/datastore/store1 vm/100 drive-scsi0 /var/tmp/vm100.raw
  pbsdirect restore --store s3://backups/pbs --keyfile enc.key vm/100/2026-11-29T10:00:00Z drive-scsi0 /dev/vg0/vm-100-disk-0
  pbsdirect restore --store /mnt/ds vm/100 qemu-server.conf -
  pbsdirect restore --store s3://backups/pbs --base auto vm/100 drive-scsi0 /dev/vg0/standby-100
  pbsdirect restore --store s3://backups/pbs --dry-run --check-present vm/100 drive-scsi0 /var/tmp/vm100.raw
  pbsdirect restore --store /mnt/ds ct/200 root.pxar /var/tmp/ct200 --include etc`,
		build:    cmdRestore,
		complete: completeSnapshotArchive,
	}
}
