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
	"syscall"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

const usage = `pbsdirect - restore, verify and write Proxmox Backup Server archives without a PBS server

Usage:
  pbsdirect restore   [flags] SNAPSHOT ARCHIVE TARGET   restore a disk image (or blob) to a file or block device (- for standard output)
  pbsdirect mount     [flags] SNAPSHOT MOUNTPOINT       mount a snapshot's archives as read-only files (FUSE), no restore needed
  pbsdirect serve-nbd [flags] SNAPSHOT                  serve a snapshot's disk images read-only over NBD (qemu-img, nbdcopy, QEMU)
  pbsdirect verify    [flags] [SNAPSHOT | TYPE/ID]      verify a snapshot, a group, a namespace (tree) or the whole store
  pbsdirect report merge [flags] FILE...                merge the JSON reports of verify shards into one
  pbsdirect drill     [flags] SNAPSHOT ARCHIVE TARGET   disaster-recovery rehearsal: restore, read back, re-check, report
  pbsdirect snapshots [flags]                           list the finished snapshots of a namespace
  pbsdirect backup    [flags] NAME.img:PATH...          back up images into a datastore
  pbsdirect key create [flags] [PATH]                   create a key file (like proxmox-backup-client key create)
  pbsdirect key show   [flags] [PATH]                   show a key file's fingerprint and KDF
  pbsdirect version

SNAPSHOT is TYPE/ID/TIME, e.g. vm/100/2026-11-29T10:00:00Z, or TYPE/ID for the latest one.
ARCHIVE is drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx.
--store is a datastore directory, s3://bucket/prefix or gs://bucket/prefix.

Run 'pbsdirect COMMAND --help' for a command's flags.

Exit codes:
  0    success
  1    the data is damaged or missing (a missing snapshot or chunk, a damaged chunk, a wrong key,
       a restore with damage under --on-missing/--on-corrupt zero): retrying will not help
  2    usage error
  3    the run could not complete for a reason outside the data: store unreachable, credentials
       refused, throttled past --retry-for, target I/O error, no space: retrying later can help
  130  interrupted by SIGINT (Ctrl-C); 143: by SIGTERM
JSON reports (--output-format json) carry the same code as "exit-code".
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// usageError marks errors that exit with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

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
// a usage error; 3 when the cause lies outside the data
// (chunkstore.Outside: unreachable store, refused credentials, throttled
// past --retry-for, target I/O error, no space); 1 for everything else,
// which is damaged or missing data.
func exitCode(err error) int {
	var ie *interruptedError
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ie):
		return 128 + int(ie.sig)
	case errors.As(err, &ue):
		return exitUsage
	case chunkstore.Outside(err):
		return exitOutside
	}
	return exitData
}

// interrupted returns the interruptedError that stopped ctx, if one did, in
// place of err (which then only says "context canceled"); otherwise err.
func interrupted(ctx context.Context, err error) error {
	var ie *interruptedError
	if err != nil && errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return err
}

// codeFor is exitCode for the error of a command run under ctx.
func codeFor(ctx context.Context, err error) int { return exitCode(interrupted(ctx, err)) }

// jsonFailure marks an error of a command in JSON mode that printed no
// report: run prints {"ok": false, "error": …, "exit-code": …} on stdout.
type jsonFailure struct{ err error }

func (e *jsonFailure) Error() string { return e.err.Error() }
func (e *jsonFailure) Unwrap() error { return e.err }

// failJSON wraps err (unless nil or a usage error) so that run reports it
// as JSON on stdout.
func failJSON(err error) error {
	var ue *usageError
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &ue) {
		return err
	}
	return &jsonFailure{err: err}
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"restore":   cmdRestore,
		"drill":     cmdDrill,
		"verify":    cmdVerify,
		"snapshots": cmdSnapshots,
		"backup":    cmdBackup,
		"key":       cmdKey,
		"mount":     cmdMount,
		"serve-nbd": cmdServeNBD,
		"report":    cmdReport,
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "help":
		if len(args) < 2 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		// "help restore" = "restore --help", "help key create" = "key create --help".
		return run(ctx, append(args[1:], "--help"), stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "pbsdirect", version)
		return 0
	}
	fn, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "pbsdirect: unknown command %q\n\n%s", name, usage)
		return 2
	}
	for _, aid := range tuningAids {
		if path := os.Getenv(aid.env); path != "" {
			stopRecording, err := startRecording(path, aid.start, aid.stop)
			if err != nil {
				fmt.Fprintf(stderr, "pbsdirect: %s: %v\n", aid.env, err)
				return exitCode(err)
			}
			defer stopRecording()
		}
	}
	orig := fn(ctx, args[1:], stdout, stderr)
	err := interrupted(ctx, orig)
	code := exitCode(err)
	var jf *jsonFailure
	if errors.As(orig, &jf) {
		writeJSON(stdout, map[string]any{"ok": false, "command": name, "error": err.Error(), "exit-code": code})
	}
	switch code {
	case exitOK:
	case exitUsage:
		fmt.Fprintf(stderr, "pbsdirect %s: %v\n", name, err)
	default:
		fmt.Fprintf(stderr, "pbsdirect %s: error: %v\n", name, err)
	}
	return code
}

// newFlags returns a flag set for a command that reports parse errors as usage errors.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: pbsdirect %s %s\n\nFlags:\n%s", name, args, fs.FlagUsages())
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
