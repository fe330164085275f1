// Command pbsdirect restores, verifies and writes Proxmox Backup Server
// archives directly from a datastore directory or a bucket, with no PBS
// server in the loop.
//
// Exit codes (see exitCode): 0 success; 1 the data is damaged or missing;
// 2 usage error; 3 the run could not complete for a reason outside the data
// (retrying later can help); 130/143 interrupted by SIGINT/SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/restore"
)

const usage = `pbsdirect - restore, verify and write Proxmox Backup Server archives without a PBS server

Usage:
  pbsdirect restore   [flags] SNAPSHOT ARCHIVE TARGET   restore a disk image (or blob) to a file or block device (- for standard output)
  pbsdirect mount     [flags] SNAPSHOT MOUNTPOINT       mount a snapshot's archives as read-only files (FUSE), no restore needed
  pbsdirect serve-nbd [flags] SNAPSHOT                  serve a snapshot's disk images read-only over NBD (qemu-img, nbdcopy, QEMU)
  pbsdirect verify    [flags] [SNAPSHOT | TYPE/ID]      verify a snapshot, a group, a namespace (tree) or the whole store
  pbsdirect report merge [flags] FILE...                merge the JSON reports of verify shards into one
  pbsdirect drill     [flags] SNAPSHOT ARCHIVE TARGET   disaster-recovery rehearsal: restore, read back, re-check, report
  pbsdirect snapshots [flags]                           list the finished snapshots of a namespace (--max-depth for those below)
  pbsdirect groups    [flags]                           list the backup groups of a namespace
  pbsdirect namespaces [flags]                          list the namespaces of a datastore (or below --ns)
  pbsdirect backup    [flags] NAME.img:PATH...          back up images into a datastore
  pbsdirect key create [flags] [PATH]                   create a key file (like proxmox-backup-client key create)
  pbsdirect key show   [flags] [PATH]                   show a key file's fingerprint and KDF
  pbsdirect key change-passphrase | paperkey | create-master-key | import-with-master-key   (see 'pbsdirect key --help')
  pbsdirect version

SNAPSHOT is TYPE/ID/TIME, e.g. vm/100/2026-11-29T10:00:00Z, or TYPE/ID for the latest one.
ARCHIVE is drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx.
--store is a datastore directory, s3://bucket/prefix or gs://bucket/prefix.

Run 'pbsdirect COMMAND --help' for a command's flags.

Exit codes:
  0    success
  1    the data is damaged or missing (a missing snapshot or chunk, a damaged chunk, a wrong key,
       a restore with damage under --on-missing/--on-corrupt zero): retrying will not help
  2    usage error, or a TARGET refused as named (exists without --force, a symbolic link, a
       directory or FIFO, a missing directory, a disk-image format, too small, inside the store);
       also a key file or source path that is not there, key create onto a file, no passphrase
       source and no terminal, backup --backup-time not after the group's last snapshot
  3    the run could not complete for a reason outside the data: store unreachable or not there
       (disk not mounted, no such bucket), credentials refused, throttled past --retry-for,
       target I/O error, permission, no space, target busy or in use, snapshot exists or group
       locked (backup): retrying later can help
  130  interrupted by SIGINT (Ctrl-C); 143: by SIGTERM (mount and serve-nbd: 0, that is how they stop)
JSON reports (--output-format json) carry the same code as "exit-code".
`

// version is set at build time with -ldflags "-X main.version=..."; when
// empty, the version comes from the build information (see buildVersion).
var version string

// usageError marks errors that exit with code 2; err, when set, is the
// cause it was made from (usageOf).
type usageError struct {
	msg string
	err error
}

func (e *usageError) Error() string { return e.msg }

// Unwrap returns the cause, or nil.
func (e *usageError) Unwrap() error { return e.err }

// usageOf marks err as a usage mistake (exit 2), keeping its text and cause.
func usageOf(err error) error { return &usageError{msg: err.Error(), err: err} }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// Exit codes (see exitCode).
const (
	exitOK      = 0
	exitData    = 1 // the data is damaged or missing
	exitUsage   = 2
	exitOutside = 3 // a cause outside the data; retrying later can help
)

// interruptedError is the cause of a run's context when a signal stopped it.
type interruptedError struct{ sig syscall.Signal }

// Error returns "interrupted (SIGINT)" or "interrupted (SIGTERM)".
func (e *interruptedError) Error() string {
	name := "SIGINT"
	if e.sig == syscall.SIGTERM {
		name = "SIGTERM"
	}
	return "interrupted (" + name + ")"
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		// A second signal ends the process at once.
		signal.Stop(sigs)
		cancel(&interruptedError{sig: sig.(syscall.Signal)})
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// exitCode maps a command's error to the process exit code: 0 for nil (and
// --help); 130 or 143 for an interruptedError (128 + signal number); 2 for
// a usage error, a key that needs a passphrase when no source of one was
// given (crypto.ErrPassphraseNeeded) or a new one too short, and a target refused as named (exists
// without --force, a symbolic link, a disk-image container, part of the
// datastore, a missing directory, not a file or block device, a device too
// small); 3 when the cause lies outside the data (chunkstore.Outside:
// unreachable store, refused credentials, throttled past --retry-for,
// target I/O error, permission, no space; a busy or in-use target, a locked
// group, a snapshot that already exists; FUSE unavailable for mount; a
// --store that is not there, storeMissingError); 1 for everything else,
// which is damaged or missing data.
func exitCode(err error) int {
	var ie *interruptedError
	var ue *usageError
	var sm *storeMissingError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ie):
		return 128 + int(ie.sig)
	case errors.As(err, &ue), errors.Is(err, crypto.ErrPassphraseNeeded), errors.Is(err, crypto.ErrPassphraseTooShort),
		errors.Is(err, crypto.ErrNotSecretFile), errors.Is(err, crypto.ErrUnsupportedKDF), errors.Is(err, restore.ErrTargetExists), errors.Is(err, restore.ErrTargetSymlink),
		errors.Is(err, restore.ErrTargetFormat), errors.Is(err, restore.ErrTargetInStore), errors.Is(err, restore.ErrTargetUnusable):
		// A target that cannot take the restore as named: the command
		// line must change, not the data or the machine.
		return exitUsage
	case chunkstore.Outside(err), errors.Is(err, restore.ErrTargetBusy), errors.Is(err, restore.ErrTargetInUse),
		errors.Is(err, restore.ErrNoSpace), errors.Is(err, chunkstore.ErrSnapshotBusy), errors.Is(err, backup.ErrSnapshotExists),
		errors.Is(err, fusefs.ErrUnavailable), errors.As(err, &sm):
		// Busy: another run holds the target or the snapshot; a retry
		// after it may succeed. No FUSE: the machine, not the data.
		return exitOutside
	}
	return exitData
}

// interrupted returns the interruptedError that stopped ctx, if one did, in
// place of err (which then only says "context canceled"); otherwise err.
func interrupted(ctx context.Context, err error) error {
	var ie *interruptedError
	if err != nil && errors.As(context.Cause(ctx), &ie) {
		// Keep what the command said about the interrupted work (e.g. how
		// to resume), with "interrupted" for the cancellation.
		if detail := strings.ReplaceAll(err.Error(), context.Canceled.Error(), "interrupted"); detail != "interrupted" {
			return fmt.Errorf("%w: %s", ie, detail)
		}
		return ie
	}
	return err
}

// codeFor is exitCode for the error of a command run under ctx.
func codeFor(ctx context.Context, err error) int { return exitCode(interrupted(ctx, err)) }

// run executes one command line and returns the exit code. In a JSON
// output format (--output-format or PROXMOX_OUTPUT_FORMAT) it prints one
// JSON result on stdout whatever happens: the command's result with "ok"
// and "exit-code", and "error" when it failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &output{w: stdout, format: outputFormatOf(args)}
	code, err := runCommand(ctx, args, out, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return code
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if ferr := out.finish(code, msg); ferr != nil && code == 0 {
		fmt.Fprintf(stderr, "pbsdirect: %v\n", ferr)
		return 1
	}
	return code
}

// runCommand runs one command line with stdout given as run's output and
// returns the exit code and the error it reported on stderr (nil on
// success).
func runCommand(ctx context.Context, args []string, stdout *output, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2, usagef("no command given")
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"restore":    cmdRestore,
		"drill":      cmdDrill,
		"verify":     cmdVerify,
		"snapshots":  cmdSnapshots,
		"groups":     cmdGroups,
		"namespaces": cmdNamespaces,
		"backup":     cmdBackup,
		"key":        cmdKey,
		"mount":      cmdMount,
		"serve-nbd":  cmdServeNBD,
		"version":    cmdVersion,
		"report":     cmdReport,
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0, flag.ErrHelp
	case "help":
		if len(args) < 2 {
			fmt.Fprint(stdout, usage)
			return 0, flag.ErrHelp
		}
		// "help restore" = "restore --help", "help key create" = "key create --help".
		return runCommand(ctx, append(args[1:], "--help"), stdout, stderr)
	case "--version":
		name = "version"
	}
	fn, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "pbsdirect: unknown command %q\n\n%s", name, usage)
		return 2, usagef("unknown command %q", name)
	}
	for _, aid := range tuningAids {
		if path := os.Getenv(aid.env); path != "" {
			stopRecording, err := startRecording(path, aid.start, aid.stop)
			if err != nil {
				fmt.Fprintf(stderr, "pbsdirect: %s: %v\n", aid.env, err)
				return exitCode(err), fmt.Errorf("%s: %w", aid.env, err)
			}
			defer stopRecording()
		}
	}
	err := interrupted(ctx, fn(ctx, args[1:], stdout, stderr))
	code := exitCode(err)
	switch {
	case code == exitOK:
		return code, err // nil, or flag.ErrHelp
	case code == exitUsage:
		fmt.Fprintf(stderr, "pbsdirect %s: %v\n", name, err)
	default:
		fmt.Fprintf(stderr, "pbsdirect %s: error: %v\n", name, err)
	}
	return code, err
}

// newFlags returns a flag set for a command that reports parse errors as
// usage errors. Its --help prints to stdout (so that it can be paged): the
// usage line, the command's description, its flags and examples (see
// commandHelp); pflag's own messages go to stderr.
func newFlags(name, args string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		about, examples := commandHelp(name)
		fmt.Fprintf(stdout, "Usage: pbsdirect %s %s\n\n", name, args)
		if about != "" {
			fmt.Fprintf(stdout, "%s\n\n", about)
		}
		fmt.Fprintf(stdout, "Flags:\n%s", fs.FlagUsages())
		if examples != "" {
			fmt.Fprintf(stdout, "\nExamples:\n%s\n", examples)
		}
	}
	return fs
}

// parse parses args and turns flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	return nil
}

// tuningAids are the environment variables that record a command's run
// for tuning: a pprof CPU profile, and a runtime execution trace (it shows
// goroutines waiting for a P while others block in writes).
var tuningAids = []struct {
	env   string
	start func(io.Writer) error
	stop  func()
}{
	{"PBSDIRECT_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile},
	{"PBSDIRECT_TRACE", trace.Start, trace.Stop},
}

// startRecording creates path and starts a recorder (start) writing to it
// until the returned function is called.
func startRecording(path string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { stop(); f.Close() }, nil
}
