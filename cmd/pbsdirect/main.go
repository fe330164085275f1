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

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/restore"
)

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

// outsideError marks a failure of the machine, not of the data (exit 3):
// permission, no space, a read-only file system where pbsdirect writes
// something other than a restore target.
type outsideError struct{ err error }

// Error returns the cause's text.
func (e *outsideError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *outsideError) Unwrap() error { return e.err }

// dataError marks a failure that the data proved (exit 1) where no typed
// cause carries it: a verify or a merge of verify reports that found
// damage and nothing outside the data.
type dataError struct{ err error }

// Error returns the cause's text.
func (e *dataError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *dataError) Unwrap() error { return e.err }

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
// small); 3 when the cause is known to lie outside the data
// (chunkstore.Outside: unreachable store, refused or expired credentials,
// throttled past --retry-for, target I/O error, permission, no space; a
// busy or in-use target, a locked group, a snapshot that already exists;
// FUSE unavailable for mount; a --store that is not there,
// storeMissingError); 1 only when the error proves the data damaged or
// missing (restore.Proven: read and failed a check, or definitively not
// there; a wrong key; a dataError); 3 for every other error, which proves
// nothing about the data: the run could not complete.
func exitCode(err error) int {
	var ie *interruptedError
	var ue *usageError
	var de *dataError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ie):
		return 128 + int(ie.sig)
	case errors.As(err, &ue), errors.Is(err, crypto.ErrPassphraseNeeded), errors.Is(err, crypto.ErrPassphraseTooShort),
		errors.Is(err, crypto.ErrNotSecretFile), errors.Is(err, crypto.ErrUnsupportedKDF), errors.Is(err, restore.ErrTargetExists), errors.Is(err, restore.ErrTargetSymlink),
		errors.Is(err, restore.ErrTargetFormat), errors.Is(err, restore.ErrTargetInStore), errors.Is(err, restore.ErrTargetUnusable),
		errors.Is(err, outfile.ErrUnusable), errors.Is(err, keys.ErrUsage), errors.Is(err, backup.ErrRefused):
		// A target that cannot take the restore as named: the command
		// line must change, not the data or the machine.
		return exitUsage
	case knownOutside(err):
		return exitOutside
	case restore.Proven(err), errors.As(err, &de):
		return exitData
	}
	// Damage is proven, never assumed.
	return exitOutside
}

// knownOutside reports whether err's cause is known to lie outside the data
// (exit 3 when it is no usage error): chunkstore.Outside, a busy or in-use
// target, no space, a locked group, a snapshot that already exists, FUSE
// unavailable, a --store that is not there, an outsideError.
func knownOutside(err error) bool {
	var sm *storeMissingError
	var oe *outsideError
	// Busy: another run holds the target or the snapshot; a retry after it
	// may succeed. No FUSE: the machine, not the data.
	return chunkstore.Outside(err) || errors.Is(err, restore.ErrTargetBusy) || errors.Is(err, restore.ErrTargetInUse) ||
		errors.Is(err, restore.ErrNoSpace) || errors.Is(err, chunkstore.ErrSnapshotBusy) || errors.Is(err, backup.ErrSnapshotExists) ||
		errors.Is(err, fusefs.ErrUnavailable) || errors.Is(err, outfile.ErrWrite) || errors.Is(err, keys.ErrWrite) || errors.As(err, &sm) || errors.As(err, &oe)
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
	if !errors.Is(err, flag.ErrHelp) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		out.finish(code, msg)
	}
	if out.werr != nil && code == exitOK {
		// What the command printed did not all reach standard output (a
		// full disk, a closed pipe): not a success.
		fmt.Fprintf(stderr, "pbsdirect: writing standard output: %v\n", out.werr)
		return exitOutside
	}
	return code
}

// runCommand runs one command line with stdout given as run's output and
// returns the exit code and the error it reported on stderr (nil on
// success; flag.ErrHelp when it printed a help text).
func runCommand(ctx context.Context, args []string, stdout *output, stderr io.Writer) (int, error) {
	var st runState
	root := newRoot(ctx, stdout, stderr, &st)
	if len(args) == 0 {
		root.SetOut(stderr)
		root.Help()
		return exitUsage, usagef("no command given")
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	// cobra adds its hidden command for the shell's requests when it
	// executes; every other first argument must name a command (cobra
	// would skip an empty one).
	isRequest := args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd
	c, _, findErr := root.Find(args)
	if args[0] == "" || !isRequest && (findErr != nil || c == root && !isHelpFlag(args[0])) {
		err := unknownCommand(root, args[0])
		fmt.Fprintf(stderr, "pbsdirect: %v\n", err)
		return exitUsage, err
	}
	if findErr == nil {
		if err := checkBareValue(c, args); err != nil {
			fmt.Fprintf(stderr, "pbsdirect %s: %v\n", strings.TrimPrefix(c.CommandPath(), root.Name()+" "), err)
			return exitUsage, err
		}
	}
	root.SetArgs(args)
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if isCompletion(c) || c.Name() == "help" {
			return nil // nothing to tune
		}
		for _, aid := range tuningAids {
			if path := os.Getenv(aid.env); path != "" {
				stop, err := startRecording(path, aid.start, aid.stop)
				if err != nil {
					return fmt.Errorf("%s: %w", aid.env, err)
				}
				stops = append(stops, stop)
			}
		}
		return nil
	}
	c, err := root.ExecuteContextC(ctx)
	if err == nil && isCompletion(c) {
		// A completion script or candidates: text for the shell only.
		textOnly(stdout)
	}
	err = interrupted(ctx, err)
	if code := exitCode(err); err != nil && isCompletion(c) && (code == exitData || code == exitOutside && !knownOutside(err)) {
		err = usageOf(err) // a completion request or script has no data to be damaged
	}
	code := exitCode(err)
	name := "pbsdirect"
	if c != root {
		name += " " + strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
	}
	switch {
	case code == exitOK && st.help:
		return code, flag.ErrHelp
	case code == exitOK:
		return code, err
	case code == exitUsage:
		fmt.Fprintf(stderr, "%s: %s\n", name, index.DisplayText(err.Error()))
	default:
		fmt.Fprintf(stderr, "%s: error: %s\n", name, index.DisplayText(err.Error()))
	}
	return code, err
}

// isHelpFlag reports whether arg asks the root for its help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || strings.HasPrefix(arg, "--help=") || strings.HasPrefix(arg, "-h=")
}

// isCompletion reports whether c is the completion command, one of its
// shells, or cobra's hidden command that answers the shell's requests.
func isCompletion(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		switch c.Name() {
		case "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return true
		}
	}
	return false
}

// unknownCommand is the usage error for a first argument that names no
// command, with the nearest command names when there are any.
func unknownCommand(root *cobra.Command, name string) error {
	if strings.HasPrefix(name, "-") {
		return usagef("want a command before %s; run 'pbsdirect --help' for the commands", name)
	}
	return usagef("unknown command %q%s; run 'pbsdirect --help' for the commands", name, nearCommands(root, name))
}

// joinOr joins names as "a, b or c".
func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// joinWords joins command-line words with spaces.
func joinWords(words []string) string { return strings.Join(words, " ") }

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
