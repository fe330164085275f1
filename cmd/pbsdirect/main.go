// Command pbsdirect restores, verifies and writes Proxmox Backup Server
// archives directly from a datastore directory or a bucket, with no PBS
// server in the loop.
//
// Exit codes: 0 success, 1 failure, 2 usage error.
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
)

const usage = `pbsdirect - restore, verify and write Proxmox Backup Server archives without a PBS server

Usage:
  pbsdirect restore   [flags] SNAPSHOT ARCHIVE TARGET   restore a disk image (or blob) to a file or block device
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
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// usageError marks errors that exit with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
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
				return 1
			}
			defer stopRecording()
		}
	}
	err := fn(ctx, args[1:], stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "pbsdirect %s: %v\n", name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "pbsdirect %s: error: %v\n", name, err)
		return 1
	}
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
