package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/bootcheck"
	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/nbd"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// bootFlags are the flags of a boot check (drill --boot, boot-check).
type bootFlags struct {
	timeout  time.Duration
	pattern  string
	agent    bool
	memory   int
	cores    int
	firmware string
	machine  string
	bus      string
	accel    string
	output   string
	re       *regexp.Regexp // parsed pattern; nil: no console check
	// bootDiskOnly (a fleet drill) boots an archive only when it is its
	// snapshot's boot disk (bootDisk).
	bootDiskOnly bool
}

// configBlob is the guest configuration a boot check reads.
const configBlob = "qemu-server.conf.blob"

func (b *bootFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&b.timeout, "boot-timeout", 5*time.Minute, "boot check: how long the guest has to show it is up (a disk that does not boot hangs in its firmware or bootloader)")
	fs.StringVar(&b.pattern, "boot-pattern", bootcheck.DefaultPattern, "boot check: regular expression (Go syntax) the serial console must show")
	fs.BoolVar(&b.agent, "boot-agent", false, "boot check: the QEMU guest agent must answer (without --boot-pattern: instead of the console pattern; with it: both)")
	fs.IntVar(&b.memory, "boot-memory", 0, "boot check: guest memory in MiB (default: the snapshot's qemu-server.conf, else 1024)")
	fs.IntVar(&b.cores, "boot-cores", 0, "boot check: guest CPU cores (default: the snapshot's qemu-server.conf, else 1)")
	fs.StringVar(&b.firmware, "boot-firmware", "", "boot check: seabios or ovmf (default: the snapshot's qemu-server.conf, else seabios)")
	fs.StringVar(&b.machine, "boot-machine", "", "boot check: machine type pc or q35 (default: the snapshot's qemu-server.conf, else pc)")
	fs.StringVar(&b.bus, "boot-bus", "", "boot check: put every disk on this bus: scsi, virtio, sata or ide (default: as qemu-server.conf says, else by the disk's name)")
	fs.StringVar(&b.accel, "boot-accel", "auto", "boot check: auto (KVM when /dev/kvm is usable, else TCG), kvm or tcg")
	fs.StringVar(&b.output, "boot-output", "", "boot check: directory for the console log and the screenshot (default: drill: the target's directory; boot-check: the current directory)")
}

// check parses the flags; a bad value is a usage error.
func (b *bootFlags) check(fs *flag.FlagSet) error {
	if b.timeout <= 0 {
		return usagef("--boot-timeout %s: want a positive duration, e.g. 5m", b.timeout)
	}
	if !b.agent || fs.Changed("boot-pattern") {
		re, err := regexp.Compile(b.pattern)
		if err != nil {
			return usagef("--boot-pattern: %v", err)
		}
		if re.MatchString("") {
			// It would pass on an empty console: no check at all.
			return usagef("--boot-pattern %q matches the empty string, so any guest would pass: give text the console must show", b.pattern)
		}
		b.re = re
	}
	if fs.Changed("boot-memory") && (b.memory < 16 || b.memory > 1<<22) {
		return usagef("--boot-memory %d: want MiB, 16..4194304", b.memory)
	}
	if fs.Changed("boot-cores") && (b.cores < 1 || b.cores > 1024) {
		return usagef("--boot-cores %d: want 1..1024", b.cores)
	}
	if b.firmware != "" && b.firmware != "seabios" && b.firmware != "ovmf" {
		return usagef("--boot-firmware %q: want seabios or ovmf", b.firmware)
	}
	if b.machine != "" && b.machine != "pc" && b.machine != "q35" {
		return usagef("--boot-machine %q: want pc or q35", b.machine)
	}
	if b.bus != "" && !slices.Contains(bootcheck.Buses, b.bus) {
		return usagef("--boot-bus %q: want one of %s", b.bus, strings.Join(bootcheck.Buses, ", "))
	}
	if b.accel != "auto" && b.accel != "kvm" && b.accel != "tcg" {
		return usagef("--boot-accel %q: want auto, kvm or tcg", b.accel)
	}
	if b.output != "" {
		st, err := os.Stat(b.output)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return usagef("--boot-output %s: does not exist", b.output)
		case err != nil:
			return usagef("--boot-output %s: %v", b.output, err)
		case !st.IsDir():
			return usagef("--boot-output %s: not a directory", b.output)
		}
	}
	return nil
}

// checkTools checks that a boot check can run (bootcheck.CheckTools),
// before what precedes it (a restore): exit 3 with the package to
// install.
func (b *bootFlags) checkTools() error {
	return bootcheck.CheckTools(nil, b.firmware == "ovmf", "")
}

// changed names a --boot-* flag given on the command line, or "".
func (b *bootFlags) changed(fs *flag.FlagSet) string {
	var name string
	fs.Visit(func(f *flag.Flag) {
		if name == "" && strings.HasPrefix(f.Name, "boot-") {
			name = f.Name
		}
	})
	return name
}

// boot boots the disks sources (guest disk name → file, device or NBD
// URL) as the configuration blob conf (nil: none) and the flags say, with
// the console log and screenshot named base+"-console.log" and
// base+"-screen.png" in --boot-output (else defDir), and dir as the
// private directory. A guest that did not boot is a dataError (exit 1);
// QEMU missing or failing is exit 3. A configuration that does not parse
// is said on stderr and read as far as it parsed.
func (b *bootFlags) boot(ctx context.Context, conf []byte, sources map[string]string, defDir, base, dir string, stderr io.Writer) (*bootcheck.Report, error) {
	var cfg bootcheck.Config
	if conf != nil {
		var err error
		if cfg, err = bootcheck.ParseConfig(conf); err != nil {
			fmt.Fprintf(stderr, "pbsdirect: boot check: %s; using the defaults and flags for the rest\n", index.DisplayText(err.Error()))
		}
	}
	m, err := bootcheck.NewMachine(cfg, sources, bootcheck.Overrides{Firmware: b.firmware, Type: b.machine, Bus: b.bus, MemoryMiB: b.memory, Cores: b.cores})
	if err != nil {
		return nil, fmt.Errorf("boot check: %w", err)
	}
	out := b.output
	if out == "" {
		out = defDir
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}
	consoleLog, shot, err := reserveBootOutput(out, base)
	if err != nil {
		return nil, err
	}
	rep, err := bootcheck.Run(ctx, bootcheck.Options{Machine: m, Timeout: b.timeout, Pattern: b.re, Agent: b.agent, Accel: strings.TrimPrefix(b.accel, "auto"),
		ConsoleLog: consoleLog, Screenshot: shot, Dir: dir})
	if rep.ConsoleLog == "" {
		os.Remove(consoleLog) // reserved, never written
	}
	if errors.Is(err, bootcheck.ErrDidNotBoot) {
		err = &dataError{fmt.Errorf("%w (console log: %s)", err, rep.ConsoleLog)}
	}
	return &rep, err
}

// reserveBootOutput creates (O_EXCL) this run's console log in dir,
// base+"-console.log", else base+"-2-console.log" and so on, so that a
// rerun or a concurrent run never overwrites another's; it returns it and
// the screenshot's name with the same stem. An unwritable dir is an
// outfile.ErrWrite (exit 3).
func reserveBootOutput(dir, base string) (consoleLog, screenshot string, err error) {
	for i := 1; i <= 1000; i++ {
		stem := base
		if i > 1 {
			stem = fmt.Sprintf("%s-%d", base, i)
		}
		consoleLog = filepath.Join(dir, stem+"-console.log")
		screenshot = filepath.Join(dir, stem+"-screen.png")
		f, err := os.OpenFile(consoleLog, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("boot check: %w: console log: %v", outfile.ErrWrite, err)
		}
		f.Close()
		if _, err := os.Lstat(screenshot); err == nil {
			os.Remove(consoleLog) // that stem's screenshot is another run's
			continue
		}
		return consoleLog, screenshot, nil
	}
	return "", "", fmt.Errorf("boot check: %w: %s: 1000 console logs named %s-*console.log already", outfile.ErrWrite, dir, base)
}

// bootRestored is drill --boot's step after the read-back (restore.
// DrillOptions.AfterReadBack): it boots the restored target with the
// snapshot's qemu-server.conf; the report goes to *rep.
func (b *bootFlags) bootRestored(archive string, rep **bootcheck.Report, stderr io.Writer) func(ctx context.Context, src *snapshot.Reader, target string) error {
	return func(ctx context.Context, src *snapshot.Reader, target string) error {
		conf, err := readConfigBlob(ctx, src)
		if err != nil {
			return err
		}
		if b.bootDiskOnly && bootDisk(src.Manifest(), conf) != archive {
			return nil
		}
		abs, err := filepath.Abs(target)
		if err != nil {
			return err
		}
		dir, done, err := makeBootDir(stderr)
		if err != nil {
			return err
		}
		defer done()
		base := filepath.Base(abs) + ".boot"
		if b.bootDiskOnly {
			// A fleet drill: one name per group and archive, which the
			// next run replaces, not one per snapshot piling up nightly.
			base = fleetBootBase(src.Snapshot(), archive)
			removeBootOutput(cmp.Or(b.output, filepath.Dir(abs)), base)
		}
		*rep, err = b.boot(ctx, conf, map[string]string{bootcheck.DiskName(archive): abs}, filepath.Dir(abs), base, dir, stderr)
		if r := *rep; b.bootDiskOnly && b.output == "" && err == nil && r != nil && r.OK {
			// Passed: the console log and screenshot are evidence only
			// of a failure, or where --boot-output asks for them.
			os.Remove(r.ConsoleLog)
			os.Remove(r.Screenshot)
			r.ConsoleLog, r.Screenshot = "", ""
		}
		return err
	}
}

// fleetBootBase is the stem of a fleet drill's boot console log and
// screenshot for archive of snapshot s: "boot-" and the group (namespace
// and TYPE/ID, "/" made "_") and archive, without the snapshot time.
func fleetBootBase(s index.Snapshot, archive string) string {
	return "boot-" + strings.NewReplacer("/", "_", ":", "").Replace(s.GroupDir()) + "-" + strings.TrimSuffix(archive, ".fidx")
}

// removeBootOutput removes the console log and screenshot named base in
// dir (reserveBootOutput's first stem), an earlier run's, so that this
// run's take their names; what cannot be removed stays (the run takes the
// next stem).
func removeBootOutput(dir, base string) {
	for _, suffix := range []string{"-console.log", "-screen.png"} {
		p := filepath.Join(dir, base+suffix)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			os.Remove(p)
		}
	}
}

// makeBootDir makes a boot check's private directory in the temporary
// directory (bootcheck.MakeDir); the directories of earlier runs that
// died (kill -9) are removed first, with a note on stderr.
func makeBootDir(stderr io.Writer) (dir string, done func(), err error) {
	if n := bootcheck.RemoveStale(os.TempDir()); n > 0 {
		fmt.Fprintf(stderr, "pbsdirect: note: removed %d boot check director(y/ies) (pbsdirect-boot-*: overlays, NBD socket) that a killed earlier run left in %s\n", n, index.DisplayText(os.TempDir()))
	}
	return bootcheck.MakeDir("")
}

// bootDisk returns the archive of the disk a snapshot boots from: the
// first disk of its configuration's boot order (else of its disks) that
// has an image archive in m, else m's first image archive.
func bootDisk(m *index.Manifest, conf []byte) string {
	var images []string
	for _, f := range m.Files {
		if strings.HasSuffix(f.Filename, ".img.fidx") {
			images = append(images, f.Filename)
		}
	}
	if len(images) == 0 {
		return ""
	}
	cfg, _ := bootcheck.ParseConfig(conf) // as far as it parses
	var names []string
	names = append(names, cfg.BootOrder...)
	for _, d := range cfg.Disks {
		names = append(names, d.Name)
	}
	for _, n := range names {
		for _, a := range images {
			if bootcheck.DiskName(a) == n {
				return a
			}
		}
	}
	return images[0]
}

// readConfigBlob reads the snapshot's qemu-server.conf.blob, nil when it
// has none.
func readConfigBlob(ctx context.Context, src *snapshot.Reader) ([]byte, error) {
	if !slices.ContainsFunc(src.Manifest().Files, func(f index.FileInfo) bool { return f.Filename == configBlob }) {
		return nil, nil
	}
	return src.Blob(ctx, configBlob)
}

// bootCheckResult is boot-check's JSON result.
type bootCheckResult struct {
	Snapshot string            `json:"snapshot"`
	Boot     *bootcheck.Report `json:"boot,omitempty"`
}

// cmdBootCheck boots a snapshot's disk images served by our own NBD
// export, each under a throw-away overlay: nothing is restored, nothing
// written to the backup.
func cmdBootCheck(fs *flag.FlagSet) commandFunc {
	var af accessFlags
	af.register(fs)
	af.readsReported = true // a failed read ends the check with its error (readWatch)
	var bf bootFlags
	bf.register(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() != 1 {
			return usagef("want SNAPSHOT, got %d argument(s)", fs.NArg())
		}
		if err := af.check(); err != nil {
			return err
		}
		if err := bf.check(fs); err != nil {
			return err
		}
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
		if err := bf.checkTools(); err != nil {
			return err
		}
		sa, err := af.open(ctx, fs.Arg(0), true, true, stderr, "boot-check")
		if errors.Is(err, archive.ErrNoArchive) {
			return usagef("no disk image (.img.fidx) to boot in %s", index.DisplayText(fs.Arg(0)))
		}
		if err != nil {
			return err
		}
		defer sa.Close()
		if len(sa.Readers) == 0 {
			return usagef("no disk image (.img.fidx) to boot in %s", sa.snap)
		}
		var conf []byte
		for _, b := range sa.Blobs {
			if b.Name == configBlob {
				conf = b.Data
			}
		}
		res := bootCheckResult{Snapshot: sa.snap.String()}
		res.Boot, err = bootFromExport(ctx, &bf, sa, conf, stderr)
		if res.Boot != nil {
			if outputJSON(stdout) {
				if werr := writeJSON(stdout, res); werr != nil {
					return werr
				}
			} else {
				printBoot(stdout, sa.snap.String(), res.Boot, interrupted(ctx, err))
			}
		}
		return err
	}
}

// bootFromExport serves the images of sa over NBD on a Unix socket in a
// private directory and boots them there (bootFlags.boot); the server
// stops and the directory is removed before it returns.
func bootFromExport(ctx context.Context, bf *bootFlags, sa *snapshotAccess, conf []byte, stderr io.Writer) (*bootcheck.Report, error) {
	dir, done, err := makeBootDir(stderr)
	if err != nil {
		return nil, err
	}
	defer done()
	sock := filepath.Join(dir, "nbd.sock")
	l, err := listenUnix(sock)
	if err != nil {
		return nil, err
	}
	// A read the export fails (the store unavailable, a damaged or
	// missing chunk) ends the boot at once with that error: the guest
	// would only show an I/O error, or hang, and the boot check would
	// blame the disk.
	bctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	exports := nbdExports(sa)
	for i := range exports {
		exports[i].Data = &readWatch{ReaderAt: exports[i].Data, name: sa.Names[i], ctx: bctx, fail: fail}
	}
	srv := &nbd.Server{Exports: exports, Log: func(msg string) {
		if bctx.Err() != nil {
			// The read that failed is the check's error (said once, by
			// run), and after an interrupt reads fail because the readers
			// were closed here: neither is news.
			return
		}
		fmt.Fprintf(stderr, "pbsdirect boot-check: %s\n", index.DisplayText(msg))
	}}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, l) }()
	defer func() { stop(); <-served }()
	// On an interrupt, the export's reads that wait on the store (a retry
	// lasts up to --retry-for) end at once: the readers are closed, so
	// QEMU can stop and the server drain (sa.Close closes them again).
	closed := make(chan struct{})
	stopClose := context.AfterFunc(ctx, func() { defer close(closed); sa.Set.Close() })
	defer func() {
		if !stopClose() {
			<-closed
		}
	}()
	sources := map[string]string{}
	for _, e := range srv.Exports {
		sources[bootcheck.DiskName(e.Name)] = "nbd+unix:///" + url.PathEscape(e.Name) + "?socket=" + sock
	}
	base := fmt.Sprintf("boot-%s-%s-%s", sa.snap.Type, sa.snap.ID, time.Unix(sa.snap.Time, 0).UTC().Format("2006-01-02T15-04-05Z"))
	rep, err := bf.boot(bctx, conf, sources, ".", base, dir, stderr)
	if cause := context.Cause(bctx); ctx.Err() == nil && bctx.Err() != nil && rep != nil {
		// The export's read error, whatever the guest did meanwhile.
		rep.OK, rep.Passed, rep.SecondsToBoot, rep.Reason, err = false, nil, 0, cause.Error(), cause
	}
	return rep, err
}

// readWatch is an export's data that, on the first read that fails while
// ctx lasts, calls fail with the error (naming the archive and offset;
// the archive reader's error names the chunk).
type readWatch struct {
	io.ReaderAt
	name string
	ctx  context.Context
	fail context.CancelCauseFunc
}

// ReadAt reads as the wrapped ReaderAt does and reports its error.
func (w *readWatch) ReadAt(p []byte, off int64) (int, error) {
	n, err := w.ReaderAt.ReadAt(p, off)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) && w.ctx.Err() == nil {
		w.fail(fmt.Errorf("boot check: the NBD export failed to read %s at offset %d: %w", w.name, off+int64(n), err))
	}
	return n, err
}

// printBoot prints a boot check's report as text; err is the check's
// error (nil when it passed).
func printBoot(w io.Writer, what string, r *bootcheck.Report, err error) {
	fmt.Fprintf(w, "boot check %s: %s\n", index.DisplayText(what), bootHeading(r, err))
	fmt.Fprintf(w, "  machine: %s, %s, %d MiB, %d core(s)", r.MachineType, r.Firmware, r.MemoryMiB, r.Cores)
	if r.Accelerator != "" {
		fmt.Fprintf(w, ", %s", r.Accelerator)
	}
	for _, d := range r.Disks {
		fmt.Fprintf(w, "; %s on %s", index.DisplayText(d.Name), d.Bus)
	}
	fmt.Fprintln(w)
	if r.OK {
		fmt.Fprintf(w, "  up after %.1fs: %s\n", r.SecondsToBoot, strings.Join(r.Passed, " and "))
	} else if r.Reason != "" && (err == nil || err.Error() != r.Reason) {
		// (An error that is the reason is printed on stderr by run: said
		// once.)
		fmt.Fprintf(w, "  %s\n", index.DisplayText(r.Reason))
	}
	if r.ConsoleLog != "" {
		fmt.Fprintf(w, "  console log: %s\n", index.DisplayText(r.ConsoleLog))
	}
	if r.Screenshot != "" {
		fmt.Fprintf(w, "  screenshot: %s\n", index.DisplayText(r.Screenshot))
	}
}

// bootHeading says how a boot check with report r and error err ended:
// "booted"; "did not boot" only for a guest that had its chance (exit 1,
// bootcheck.ErrDidNotBoot); "interrupted"; "stopped: ..." for a disk
// whose data failed a read; else "could not run".
func bootHeading(r *bootcheck.Report, err error) string {
	var ie *cli.InterruptedError
	switch {
	case r.OK && err == nil:
		return "booted"
	case errors.Is(err, bootcheck.ErrDidNotBoot):
		return "did not boot"
	case errors.As(err, &ie), errors.Is(err, context.Canceled):
		return "interrupted"
	case restore.Proven(err):
		return "stopped: the disk's data is damaged or missing"
	}
	return "could not run"
}

// bootCheckCommand is 'pbsdirect boot-check'.
func bootCheckCommand() commandSpec {
	return commandSpec{
		use:   "boot-check [flags] SNAPSHOT",
		short: "boot a snapshot's disks in QEMU, without restoring them, and check that the guest comes up",
		long: `Boot a snapshot's disk images in QEMU (qemu-system-x86_64, Debian package
qemu-system-x86; KVM when /dev/kvm is usable, else TCG) with no network, and
check that the guest comes up: the serial console shows --boot-pattern (a
login prompt by default) and/or, with --boot-agent, the QEMU guest agent
answers, within --boot-timeout. Nothing is restored: the images are served
read-only by pbsdirect's own NBD export on a Unix socket in a private
temporary directory, each under a throw-away qcow2 overlay (qemu-img, Debian
package qemu-utils); nothing is written to the backup, and the overlays,
the socket and the directory are removed afterwards.

The machine follows the snapshot's qemu-server.conf where it has one
(bios: seabios or ovmf, from /usr/share/OVMF; machine; memory; cores ×
sockets; each disk's bus and the boot order); the --boot-* flags override
it. The console log and a screenshot (PNG) are saved in --boot-output
(default: the current directory) as boot-TYPE-ID-TIME-console.log and
-screen.png.

A read the export fails stops the check at once with that error (not "did
not boot"). The console log and screenshot names get -2, -3… when taken by
another run.

Exit status: 0 the guest came up; 1 it did not boot (no bootable device, a
bootloader or kernel failure, a kernel panic, the timeout), or its data is
damaged or missing; 2 a usage error (no disk image in the snapshot, a
--boot-pattern matching the empty string, a value out of range); 3 QEMU is
not installed or failed, the store is unavailable, or another reason
outside the data; 130/143 interrupted (QEMU is stopped).`,
		example: `  pbsdirect boot-check --store /mnt/ds vm/100
  pbsdirect boot-check --store s3://backups/pbs --boot-timeout 10m --boot-agent --output-format json vm/100`,
		build:    cmdBootCheck,
		complete: completeOneSnapshot,
	}
}

// checkDrillBoot checks drill's boot flags: --boot-* only with --boot.
func checkDrillBoot(fs *flag.FlagSet, boot bool, bf *bootFlags) error {
	if !boot {
		if name := bf.changed(fs); name != "" {
			return usagef("--%s is for a drill with --boot", name)
		}
		return nil
	}
	return bf.check(fs)
}

// printDrillBoot prints the boot check lines of a drill's text report.
func printDrillBoot(w io.Writer, r *bootcheck.Report) {
	if r.OK {
		fmt.Fprintf(w, "  boot: up after %.1fs (%s; %s, %s)\n", r.SecondsToBoot, strings.Join(r.Passed, " and "), r.Firmware, r.Accelerator)
	} else {
		fmt.Fprintf(w, "  boot: %s\n", index.DisplayText(r.Reason))
	}
	if r.ConsoleLog != "" {
		fmt.Fprintf(w, "  boot console log: %s\n", index.DisplayText(r.ConsoleLog))
	}
	if r.Screenshot != "" {
		fmt.Fprintf(w, "  boot screenshot: %s\n", index.DisplayText(r.Screenshot))
	}
}
