package main

import (
	"context"
	"errors"
	"io"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=..."; when
// empty, the version comes from the build information (see buildVersion).
var version string

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

func main() {
	ctx, cancel := cli.SignalContext()
	defer cancel(nil)
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// exitCode maps a command's error to the process exit code: 0 for nil (and
// --help); 130 or 143 for a cli.InterruptedError (128 + signal number); 2 for
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
// there; a dataError); a snapshot that no key given opens
// (snapshot.KeyError) and a key not opened (a wrong passphrase,
// keys.ErrNotOpened) are 3, a key file or printout that does not parse 2
// (keys.ErrUsage); 3 for every other error, which proves
// nothing about the data: the run could not complete.
func exitCode(err error) int {
	var ie *cli.InterruptedError
	var ue *cli.UsageError
	var de *dataError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ie):
		return 128 + int(ie.Sig)
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
// unavailable, a --store that is not there, an outsideError, a snapshot
// that no key given opens (snapshot.KeyError), a key file or master key
// not opened (keys.ErrNotOpened, a wrong passphrase: no damage, retry with
// the right one).
func knownOutside(err error) bool {
	var sm *storeMissingError
	var oe *outsideError
	var ke *snapshot.KeyError
	// Busy: another run holds the target or the snapshot; a retry after it
	// may succeed. No FUSE: the machine, not the data.
	return chunkstore.Outside(err) || errors.Is(err, restore.ErrTargetBusy) || errors.Is(err, restore.ErrTargetInUse) ||
		errors.Is(err, restore.ErrNoSpace) || errors.Is(err, chunkstore.ErrSnapshotBusy) || errors.Is(err, backup.ErrSnapshotExists) ||
		errors.Is(err, fusefs.ErrUnavailable) || errors.Is(err, outfile.ErrWrite) || errors.Is(err, keys.ErrWrite) || errors.As(err, &sm) || errors.As(err, &oe) ||
		errors.As(err, &ke) || // no key given opens the snapshot: not its data
		errors.Is(err, keys.ErrNotOpened) || errors.Is(err, crypto.ErrWrongPassphrase) || errors.Is(err, crypto.ErrMasterKeyPassphrase) ||
		errors.Is(err, crypto.ErrKeyFingerprint)
}

// codeFor is exitCode for the error of a command run under ctx.
func codeFor(ctx context.Context, err error) int { return exitCode(interrupted(ctx, err)) }

// run executes one command line and returns the exit code (cli.Program.Run):
// in a JSON output format, one JSON result on stdout whatever happens.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return program().Run(ctx, args, stdout, stderr)
}

// program is pbsdirect for the command layer's machinery: its commands,
// texts, exit codes and flag values.
func program() *cli.Program {
	return &cli.Program{
		Name:           "pbsdirect",
		Short:          "restore, verify and write Proxmox Backup Server archives without a PBS server",
		Long:           rootHelp,
		CompletionLong: completionHelp,
		Commands:       func() []cli.Spec { return cliSpecs(commandSpecs()) },
		ExitCode:       exitCode,
		KnownOutside:   knownOutside,
		Display:        index.DisplayText,
		FlagValues:     flagValues,
		IsFlagValue:    isFlagValue,
		CompleteFlags:  completeFlags,
	}
}
