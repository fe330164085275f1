package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// guestFlags are restore-guest's own flags, beside restore's.
type guestFlags struct {
	maps     *[]string // ARCHIVE=TARGET
	only     *[]string // --archive: restore only these disks
	config   *string
	noConfig *bool
}

// guestDiskReport is one disk's line of restore-guest's report.
type guestDiskReport struct {
	Archive   string  `json:"archive"`
	Target    string  `json:"target"`
	Size      uint64  `json:"size"`       // image bytes
	DataBytes uint64  `json:"data-bytes"` // non-zero bytes written to the target
	Seconds   float64 `json:"seconds"`
	MiBps     float64 `json:"mib-per-second"` // image bytes / seconds
	// Result is "restored", "restored with damage", "complete" (a
	// --resume found it so, nothing written), "failed", or, when the run
	// was interrupted or another disk's failure stopped it, "interrupted"
	// ("stopped" for the latter; "stopped, journal kept" when it keeps
	// chunks for a --resume). Size is the image's size whatever the
	// result; DataBytes what this run wrote.
	Result        string `json:"result"`
	ResumedChunks int    `json:"resumed-chunks,omitempty"`
	// KeptChunks are the chunks a stopped (failed or interrupted) disk
	// made durable and keeps for a --resume.
	KeptChunks    int             `json:"kept-chunks,omitempty"`
	DamagedRanges []restore.Range `json:"damaged-ranges,omitempty"`
	Error         string          `json:"error,omitempty"`
	ExitCode      int             `json:"exit-code"`
	// Delta is what a differential restore (--base, --in-place) of the
	// disk found and left out.
	Delta *restore.DeltaResult `json:"delta,omitempty"`
}

// guestConfigReport is what became of the guest's configuration: its
// path, whether it is there as stored (written by this run, or found so
// by a --resume), and, when not, why.
type guestConfigReport struct {
	Path    string `json:"path"`
	Written bool   `json:"written"`
	Reason  string `json:"reason,omitempty"`
}

// guestReport is restore-guest's report: every disk, the configuration
// written, and the totals of the one run over all disks.
type guestReport struct {
	Snapshot      string             `json:"snapshot"`
	Disks         []guestDiskReport  `json:"disks"`
	Config        *guestConfigReport `json:"config,omitempty"` // the configuration; nil when the snapshot has none or --no-config
	Size          uint64             `json:"size"`             // image bytes of all disks
	DataBytes     uint64             `json:"data-bytes"`
	ChunksFetched uint64             `json:"chunks-fetched"` // unique chunks this run fetched and verified, each once
	// ChunksFailed counts the chunks this run read that failed their
	// check; FetchedBytes, the encoded bytes this run read from the
	// store, counts both these and ChunksFetched.
	ChunksFailed uint64 `json:"chunks-failed,omitempty"`
	FetchedBytes uint64 `json:"fetched-bytes"`
	// SharedChunks is the plan's count of distinct chunks more than one
	// disk uses (each once, the zero chunk left out), fetched once for
	// all of them; ChunksFetched is what was fetched.
	SharedChunks  int `json:"shared-chunks"`
	ResumedChunks int `json:"resumed-chunks,omitempty"` // distinct chunks the disks held already (their stopped restores kept them, or found complete), not fetched again; each once, as chunks-fetched
	// Salvaged lists the chunks recovered from copies kept aside as
	// damaged (".bad" copies, which PBS never reads), the first
	// restore.MaxSalvagedListed; SalvagedChunks counts them all.
	Salvaged       []restore.SalvagedChunk `json:"recovered-from-bad-copies,omitempty"`
	SalvagedChunks int                     `json:"recovered-from-bad-copies-count,omitempty"`
	Seconds        float64                 `json:"seconds"`
	MiBps          float64                 `json:"mib-per-second"` // image bytes of the disks worked on (a run that failed: bytes written) / seconds; 0 when nothing was fetched or written
	ExitCode       int                     `json:"exit-code"`
	// RateLimit is what the rate limits were (--rate, --burst,
	// --rate-requests) and how long reads waited on them; absent without.
	RateLimit *ratelimit.Report `json:"rate-limit,omitempty"`
}

func cmdRestoreGuest(fs *flag.FlagSet) commandFunc {
	rc := registerRestoreFlags(fs)
	rc.registerDamageFlags(fs)
	rc.registerPxarFlags(fs, false)
	rc.delta = registerDeltaFlags(fs)
	rc.keepWork = true
	gf := guestFlags{
		maps:     fs.StringArray("map", nil, "ARCHIVE=TARGET: restore the disk ARCHIVE (drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx) to TARGET (a file or block device) instead of DIR/ARCHIVE.img; may be repeated"),
		only:     fs.StringArray("archive", nil, "restore only this disk (may be repeated); default every disk image of the snapshot"),
		config:   fs.String("config", "", "write the guest configuration (qemu-server.conf or pct.conf) to this path instead of DIR/qemu-server.conf (DIR/pct.conf)"),
		noConfig: fs.Bool("no-config", false, "do not write the guest configuration"),
	}
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() != 2 {
			return usagef("want SNAPSHOT DIR, got %d argument(s)", fs.NArg())
		}
		if err := rc.checkFlags(); err != nil {
			return err
		}
		if *gf.noConfig && fs.Changed("config") {
			return usagef("--config names where the configuration goes, --no-config writes none: give one")
		}
		if err := rc.parseDamage(); err != nil {
			return err
		}
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
		dir := fs.Arg(1)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usagef("DIR %s: %s", index.DisplayText(dir), dirArgProblem(err, err == nil && st.IsDir()))
		}
		maps := map[string]string{}
		for _, m := range *gf.maps {
			a, t, ok := strings.Cut(m, "=")
			if !ok || a == "" || t == "" {
				return usagef("--map %s: want ARCHIVE=TARGET", index.DisplayText(m))
			}
			a = index.NormalizeArchiveName(a)
			if _, dup := maps[a]; dup {
				return usagef("--map %s: %s is mapped twice", index.DisplayText(m), index.DisplayText(a))
			}
			maps[a] = t
		}
		return rc.restoreGuest(ctx, fs.Arg(0), dir, maps, gf, stdout, stderr)
	}
}

// parseDamage parses --on-missing and --on-corrupt into rc.damage.
func (rc *restoreCmd) parseDamage() error {
	for i, f := range []*string{rc.onMissing, rc.onCorrupt} {
		d, err := restore.ParseDamage(*f)
		if err != nil {
			return usagef("--%s: %v", []string{"on-missing", "on-corrupt"}[i], err)
		}
		rc.damage[i] = d
	}
	return nil
}

// guestDisks returns the disk images of the snapshot to restore (only
// those --archive names, when given) and their targets: the --map target,
// or DIR/ARCHIVE.img. An archive --map or --archive names that the
// snapshot has not is a usage error naming those it has; so are two disks
// going to one target, whatever names it is given (checkDistinctTargets).
func guestDisks(m *index.Manifest, dir string, maps map[string]string, only []string) ([]string, []string, error) {
	var have []string
	for _, f := range m.Files {
		if strings.HasSuffix(f.Filename, ".img.fidx") {
			have = append(have, f.Filename)
		}
	}
	names := func() string {
		var s []string
		for _, h := range have {
			s = append(s, index.DisplayText(h))
		}
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	}
	want := have
	if len(only) > 0 {
		want = nil
		for _, a := range only {
			a = index.NormalizeArchiveName(a)
			if !slices.Contains(have, a) {
				return nil, nil, usagef("--archive %s: the snapshot has no such disk image (it has %s)", index.DisplayText(a), names())
			}
			if !slices.Contains(want, a) {
				want = append(want, a)
			}
		}
	}
	for a := range maps {
		if !slices.Contains(have, a) {
			return nil, nil, usagef("--map %s: the snapshot has no such disk image (it has %s)", index.DisplayText(a), names())
		}
		if !slices.Contains(want, a) {
			return nil, nil, usagef("--map %s: not among the disks --archive selects", index.DisplayText(a))
		}
	}
	if len(want) == 0 {
		return nil, nil, usagef("the snapshot has no disk image (.img.fidx) to restore")
	}
	var targets []string
	for _, a := range want {
		t, ok := maps[a]
		if !ok {
			t = filepath.Join(dir, strings.TrimSuffix(a, ".fidx"))
		}
		targets = append(targets, t)
	}
	if err := checkDistinctTargets(targets); err != nil {
		return nil, nil, err
	}
	for i, t := range targets {
		if err := checkNotWorkFile("--map "+index.DisplayText(strings.TrimSuffix(want[i], ".img.fidx"))+":", t, want, targets); err != nil {
			return nil, nil, err
		}
	}
	return want, targets, nil
}

// guestConfig returns the configuration blob of the snapshot
// (qemu-server.conf.blob, pct.conf.blob) and the path it is written to;
// "" when there is none or --no-config.
func guestConfig(m *index.Manifest, dir string, gf guestFlags) (blob, path string) {
	if *gf.noConfig {
		return "", ""
	}
	for _, f := range m.Files {
		if f.Filename == "qemu-server.conf.blob" || f.Filename == "pct.conf.blob" {
			if *gf.config != "" {
				return f.Filename, *gf.config
			}
			return f.Filename, filepath.Join(dir, strings.TrimSuffix(f.Filename, ".blob"))
		}
	}
	return "", ""
}

// restoreGuest restores the disks of snapshot ref (restore.RestoreGuest)
// and its configuration, and reports them.
func (rc *restoreCmd) restoreGuest(ctx context.Context, ref, dir string, maps map[string]string, gf guestFlags, stdout, stderr io.Writer) error {
	sf, pf := &rc.sf, rc.pf
	start := time.Now()
	stopRetryLines := startRetryLines(stderr, sf.progress, "restore-guest", &sf.retries)
	defer stopRetryLines()
	ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{cryptMode: *rc.cryptMode, requireSig: *rc.requireSig}, pf.fetchersFor(sf.fetchSpec()))
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
	if snap.Type == "ct" && len(ctArchives(src.Manifest())) > 0 {
		if rc.delta.active() {
			return usagef("--base and --in-place restore disk images: a container's pxar archives are extracted whole")
		}
		return rc.restoreGuestCT(ctx, src, dir, maps, gf, start, keys.OpeningTime, stopRetryLines, stdout, stderr)
	}
	archives, targets, err := guestDisks(src.Manifest(), dir, maps, *gf.only)
	if err != nil {
		return err
	}
	// Every target is checked before any is opened or any chunk read,
	// and every refusal said at once: the configuration's path, the busy
	// targets here, the disks' targets' own refusals in RestoreGuest.
	var refused []error
	blobName, configPath := guestConfig(src.Manifest(), dir, gf)
	var config []byte
	configThere := false // --resume: the configuration is there already, as stored
	if blobName != "" {
		if config, err = src.Blob(ctx, blobName); err != nil {
			return err
		}
		configThere, err = checkGuestConfig(configPath, archives, targets, config, *rc.force, *rc.resume)
		if err == nil && !configThere {
			// WriteFile's own checks (inside the store, through a link),
			// made now: it writes only after every disk.
			if err = filetarget.CheckWriteFile(configPath, rc.targetOptions(0)); err != nil {
				err = configError(configPath, err)
			}
		}
		if err != nil {
			refused = append(refused, err)
		}
	}
	probe := rc.targetOptions(0)
	probe.Resume = *rc.resume
	for _, t := range targets {
		if err := filetarget.CheckNotBusy(t, probe); err != nil {
			refused = append(refused, err)
		}
	}
	opts := pf.options(sf.fetchSpec())
	opts.OnMissing, opts.OnCorrupt = rc.damage[0], rc.damage[1]
	opts.RateLimit = sf.rate.limiter
	defer raiseProcs(opts)()
	var disks []restore.GuestDisk
	for i, a := range archives {
		disks = append(disks, restore.GuestDisk{Archive: a, Sink: &filetarget.Sink{Path: targets[i], Options: rc.targetOptions(0)}})
	}
	ro := restore.RestoreOptions{
		Pipeline: opts, Resume: *rc.resume, Restart: *rc.restart, KeepWork: rc.keepWork, Refused: errors.Join(refused...),
		Note: func(msg string) { fmt.Fprintf(stderr, "pbsdirect: %s\n", msg) },
		Progress: func(total int64, done func() int64) func() {
			stopRetryLines()
			return startProgressWatch(stderr, sf.progress, "restore-guest", total, done, &sf.retries).done
		},
	}
	sinks := make([]restore.Sink, len(disks))
	for i := range disks {
		sinks[i] = disks[i].Sink
	}
	if ro.Delta, err = rc.delta.options(ctx, store, ns, keys, sinks, stderr); err != nil {
		return err
	}
	g, err := restore.RestoreGuest(ctx, src, disks, ro)
	if errors.Is(err, restore.ErrRefused) {
		return usagef("%s", err.Error()) // the command line must change (exit 2)
	}
	if err != nil {
		return err
	}
	took := time.Since(start) - keys.OpeningTime()
	var errs []error
	rep := guestReport{Snapshot: snap.String(), ChunksFetched: g.Stats.Fetched.Load(), ChunksFailed: g.Stats.Failed.Load(), FetchedBytes: g.Stats.FetchedBytes.Load(), SharedChunks: g.SharedChunks,
		Salvaged: g.Stats.Salvaged.Chunks(), SalvagedChunks: g.Stats.Salvaged.Count()}
	var runBytes uint64 // image bytes of the disks this run worked on (not found complete)
	for i, a := range archives {
		d := guestDiskReport{Archive: a, Target: targets[i]}
		res, derr := g.Disks[i], g.Errs[i]
		switch {
		case derr != nil:
			d.Result, d.Error, d.ExitCode = "failed", derr.Error(), codeFor(ctx, derr)
			if errors.Is(derr, restore.ErrRefused) {
				derr = usageOf(derr)
				d.ExitCode = exitUsage
			}
			if p := g.Partial[i]; p != nil {
				// What the disk got before it stopped: its size, the
				// bytes this run wrote, the chunks kept for a resume.
				d.Size, d.ResumedChunks = p.Plan.Size, p.Resumed
				d.DataBytes = p.Stats.DataBytes.Load()
				runBytes += d.Size
			}
			if se := (*restore.StoppedError)(nil); errors.As(derr, &se) {
				d.KeptChunks = se.Durable
			}
			if gs := (*restore.GuestStopError)(nil); ctx.Err() != nil || errors.As(derr, &gs) {
				// Interrupted, or stopped with the guest by another disk's
				// failure (said in that disk's error, not again here).
				d.Result = "interrupted"
				if ctx.Err() == nil {
					d.Result = "stopped"
				}
				if d.KeptChunks > 0 {
					d.Result = "stopped, journal kept"
				}
			}
			errs = append(errs, derr)
		case res.Complete != "":
			d.Result, d.Size, d.ResumedChunks = "complete", res.Plan.Size, res.Resumed
			fmt.Fprintf(stderr, "pbsdirect: %s\n", res.Complete)
		default:
			runBytes += res.Plan.Size
			if cerr := res.Target.Close(false); cerr != nil {
				d.Result, d.Error, d.ExitCode = "failed", cerr.Error(), codeFor(ctx, cerr)
				errs = append(errs, cerr)
				break
			}
			d.Result, d.Size, d.ResumedChunks = "restored", res.Plan.Size, res.Resumed
			d.DataBytes, d.Delta = res.Stats.DataBytes.Load(), res.Delta
			d.Seconds = res.Elapsed.Seconds()
			if res.Stats.Fetched.Load() > 0 || d.DataBytes > 0 {
				d.MiBps = restore.MiBps(d.Size, res.Elapsed)
			}
			if res.Damage != nil {
				d.Result, d.DamagedRanges, d.ExitCode = "restored with damage", res.Damage.Ranges(), exitData
				errs = append(errs, res.Damage)
			}
		}
		if res != nil {
			d.Size = res.Plan.Size
		}
		rep.Size += d.Size
		rep.DataBytes += d.DataBytes
		rep.Disks = append(rep.Disks, d)
	}
	rep.ResumedChunks = g.ResumedChunks
	gerr := errors.Join(errs...)
	if config != nil {
		rep.Config = &guestConfigReport{Path: configPath}
	}
	switch {
	case config == nil:
	case gerr != nil:
		// Written once every disk is: a rerun writes it.
		rep.Config.Reason = configNotWritten(ctx, gerr)
	case configThere:
		rep.Config.Written = true
	default:
		// Written as it is, never shown: its text is the store's.
		if err := filetarget.WriteFile(configPath, config, rc.targetOptions(0)); err != nil {
			gerr = configError(configPath, err)
			rep.Config.Reason = gerr.Error()
		} else {
			rep.Config.Written = true
		}
	}
	rep.Seconds = took.Seconds()
	if rep.ChunksFetched > 0 || rep.DataBytes > 0 {
		// A run that fetched and wrote nothing (every chunk resumed, every
		// disk complete) has no rate to say.
		rep.MiBps = restore.MiBps(runBytes, took)
		if len(errs) > 0 {
			// Stopped: the bytes written, not the images, were done.
			rep.MiBps = restore.MiBps(rep.DataBytes, took)
		}
	}
	rep.RateLimit = rc.sf.rate.limiter.Report()
	rep.ExitCode = codeFor(ctx, gerr)
	if rc.sf.json() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
		return gerr
	}
	printGuestReport(stdout, rep)
	return gerr
}

// printGuestReport prints rep as text: a table of the disks, then the
// totals and the configuration written.
func printGuestReport(w io.Writer, rep guestReport) {
	fmt.Fprintf(w, "restored guest %s: %d disk(s)\n", index.DisplayText(rep.Snapshot), len(rep.Disks))
	fmt.Fprintf(w, "  %-24s %-32s %11s %11s %10s  %s\n", "ARCHIVE", "TARGET", "SIZE", "WRITTEN", "MiB/s", "RESULT")
	for _, d := range rep.Disks {
		fmt.Fprintf(w, "  %-24s %-32s %11s %11s %10.1f  %s\n", index.DisplayText(d.Archive), index.DisplayText(d.Target),
			humanBytes(d.Size), humanBytes(d.DataBytes), d.MiBps, d.Result)
		for _, r := range d.DamagedRanges {
			fmt.Fprintf(w, "    written as zeros: [%d,%d)\n", r.Offset, r.Offset+r.Length)
		}
	}
	rate := "nothing to fetch"
	if rep.ChunksFetched > 0 || rep.DataBytes > 0 {
		rate = fmt.Sprintf("%.1f MiB/s", rep.MiBps)
	}
	failed := ""
	if rep.ChunksFailed > 0 {
		failed = fmt.Sprintf(", with %d that failed their check", rep.ChunksFailed)
	}
	fmt.Fprintf(w, "  total: %s in %.2fs (%s); chunks fetched in this run: %d (%s encoded read%s); %d shared by several disks and fetched once\n",
		humanBytes(rep.Size), rep.Seconds, rate, rep.ChunksFetched, humanBytes(rep.FetchedBytes), failed, rep.SharedChunks)
	if rep.ResumedChunks > 0 {
		fmt.Fprintf(w, "  resumed: %d distinct chunks already on the targets (kept by the stopped restore or found there), not fetched again\n", rep.ResumedChunks)
	}
	writeLimitLine(w, "  ", rep.RateLimit)
	printSalvaged(w, restore.Summary{Salvaged: rep.Salvaged, SalvagedChunks: rep.SalvagedChunks})
	switch c := rep.Config; {
	case c == nil:
	case c.Written:
		fmt.Fprintf(w, "  configuration written to %s\n", index.DisplayText(c.Path))
	default:
		fmt.Fprintf(w, "  configuration not written: %s\n", c.Reason)
	}
}

// restoreGuestCommand is 'pbsdirect restore-guest'.
func restoreGuestCommand() commandSpec {
	return commandSpec{
		use:   "restore-guest [flags] SNAPSHOT DIR",
		short: "restore every disk image and the configuration of a VM or container snapshot in one run",
		long: `Restore a guest: every disk image (.img.fidx) of the snapshot, each to its own
target, and its configuration (qemu-server.conf.blob, pct.conf.blob), in one
run over one plan: a chunk several disks (or positions) use is fetched,
checked and decoded once and written wherever it is needed.

A disk goes to DIR/ARCHIVE.img (drive-scsi0.img.fidx to DIR/drive-scsi0.img)
unless --map ARCHIVE=TARGET names a file or block device for it; --archive
restores only the disks it names. An archive --map or --archive names that
the snapshot has not is a usage error (exit 2) naming those it has. A
container snapshot (ct/) is extracted instead: root.pxar into DIR/rootfs (or
--map root.pxar=DIR2), as restore extracts it (--map-ids for an unprivileged
container), pct.conf beside it. The configuration is written, as stored, to
DIR/qemu-server.conf (DIR/pct.conf) or --config, once every disk is restored;
--no-config writes none.

Every target is checked and locked before the first chunk of data is read:
when one is refused (it exists without --force, it is busy, too small, in
use), no target is created or changed. Each disk keeps its own resume
journal, as restore does: a stopped guest restore is continued with --resume
(a disk found complete is skipped), started over with --restart. The report
lists every disk's target, size, bytes written, throughput and result; the
exit code covers the whole guest (a damaged disk: 1).

SNAPSHOT is TYPE/ID/TIME or TYPE/ID for the group's latest.`,
		example: `  pbsdirect restore-guest --store /mnt/datastore/store1 vm/100 /var/tmp/vm100
  pbsdirect restore-guest --store s3://backups/pbs vm/100/2026-11-29T10:00:00Z /var/tmp/vm100 --map drive-scsi0=/dev/nvme1n1
  pbsdirect restore-guest --store /mnt/ds --resume vm/100 /var/tmp/vm100`,
		build:    cmdRestoreGuest,
		complete: completeSnapshot,
	}
}

// checkGuestConfig checks, before anything is written, the path the
// guest's configuration config goes to: not one of the disks' targets
// (archives[i] goes to targets[i]; the same path, or the same file through
// a link or a hard link: device and inode), not a directory, device, FIFO
// or socket, its directory there, and not an existing file without force.
// With resume, an existing file that holds config as stored is the
// configuration written by the run continued: true, nothing to write. A
// refusal is a usage error (exit 2) naming the path.
func checkGuestConfig(path string, archives, targets []string, config []byte, force, resume bool) (there bool, err error) {
	name := index.DisplayText(path)
	if err := checkNotWorkFile("--config", path, archives, targets); err != nil {
		return false, err
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	cst, cerr := os.Stat(path) // through a link: the file written over
	for i, t := range targets {
		same := abs(t) == abs(path)
		if !same && cerr == nil {
			if tst, err := os.Stat(t); err == nil && os.SameFile(cst, tst) {
				same = true
			}
		}
		if same {
			return false, usagef("--config %s is the target of disk %s: give the configuration a path of its own", name, index.DisplayText(archives[i]))
		}
	}
	lst, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		if st, derr := os.Stat(filepath.Dir(path)); derr != nil || !st.IsDir() {
			return false, restore.Unusable(fmt.Errorf("configuration %s: no such directory %s", name, index.DisplayText(filepath.Dir(path))))
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("configuration %s: %w", name, err)
	}
	st := lst
	if cerr == nil {
		st = cst
	}
	if !st.Mode().IsRegular() {
		return false, restore.Unusable(fmt.Errorf("configuration %s: not a regular file (%s): the configuration is written to a file", name, st.Mode().Type()))
	}
	if force {
		return false, nil
	}
	// A resume of a guest whose configuration was written (its disks were
	// all restored) finds it there as it is stored.
	if have, rerr := os.ReadFile(path); resume && lst.Mode().IsRegular() && rerr == nil && bytes.Equal(have, config) {
		return true, nil
	}
	return false, fmt.Errorf("configuration %s: %w", name, restore.ErrTargetExists)
}
