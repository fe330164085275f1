package main

import (
	"slices"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// commandFunc runs a command once its flags are parsed (cli.Func): args
// are the positional arguments, stdout is run's output, stderr is for
// messages.
type commandFunc = cli.Func

// commandSpec is one command of pbsdirect's tree, declared in the file of
// the command: use is its usage line without "pbsdirect" ("restore [flags]
// SNAPSHOT ARCHIVE TARGET"; the first word is its name), short the one-line
// summary of the command list, long the description of --help and the man
// page (argument forms, environment), example its examples. A leaf has
// build, which declares the command's flags on fs and returns what runs
// it; a group (key, report) has sub. complete completes the positional
// arguments (nil: file names).
type commandSpec struct {
	use      string
	short    string
	long     string
	example  string
	build    func(fs *flag.FlagSet) commandFunc
	complete cli.ArgCompleter
	sub      []commandSpec
}

// commandSpecs is the command tree below "pbsdirect", in the order help
// lists it (sorted by name).
func commandSpecs() []commandSpec {
	return []commandSpec{
		restoreCommand(), restoreGuestCommand(), mountCommand(), serveNbdCommand(), verifyCommand(), drillCommand(), bootCheckCommand(),
		snapshotsCommand(), groupsCommand(), namespacesCommand(), datastoresCommand(), backupCommand(),
		keyCommand(), reportCommand(), repairCommand(), catalogCommand(), manCommand(), versionCommand(),
	}
}

// cliSpecs returns specs as the command layer's machinery takes them.
func cliSpecs(specs []commandSpec) []cli.Spec {
	var out []cli.Spec
	for _, s := range specs {
		out = append(out, cli.Spec{Use: s.use, Short: s.short, Long: s.long, Example: s.example, Build: s.build, Complete: s.complete, Sub: cliSpecs(s.sub)})
	}
	return out
}

// rootHelp is what 'pbsdirect --help' says besides the command list.
const rootHelp = `pbsdirect restores, verifies and writes Proxmox Backup Server archives directly
from a datastore directory or a bucket, with no PBS server.

SNAPSHOT is TYPE/ID/TIME, e.g. vm/100/2026-11-29T10:00:00Z, or TYPE/ID for
the latest one. ARCHIVE is drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx.
--store is a datastore directory, s3://bucket/prefix or gs://bucket/prefix.

Exit codes:
  0    success
  1    the data is damaged or missing, proven: read and failed a check, or
       definitively not there (a missing snapshot or chunk, a damaged chunk,
       a restore with damage under --on-missing/--on-corrupt zero, a chunk
       verify finds intact only in a .bad copy, which PBS does not read):
       retrying will not help; it wins over 3 in a verify of many snapshots
  2    usage error, or a TARGET refused as named (exists without --force, a
       symbolic link, a directory or FIFO, a missing directory, a disk-image
       format, too small, inside the store); also a key file or source path
       that is not there, a key file or printed key that does not parse,
       key create onto a file, no passphrase source and no terminal, backup
       --backup-time before the group's last snapshot
  3    the run could not complete for a reason outside the data: store
       unreachable or not there (disk not mounted, no such bucket), credentials
       refused, throttled past --retry-for, target I/O error, permission, no
       space, target busy or in use, snapshot exists or group locked (backup),
       a snapshot that no key given opens (key missing, naming its key's
       fingerprint: retry with its --keyfile), a key not opened (a wrong
       passphrase for a key file or master key: retry with the right one),
       and any error that proves nothing about the data: retrying later can
       help
  130  interrupted by SIGINT (Ctrl-C); 143: by SIGTERM (mount and serve-nbd
       exit 0: that is how they stop)
JSON reports (--output-format json) carry the same code as "exit-code".

Shell completion: pbsdirect completion SHELL --help. Man pages: pbsdirect man DIR.`

// isFlagValue reports whether v is a value flag name takes: one of
// flagValues, or for --s3-path-style any spelling its parser accepts (off,
// no, 0, FALSE, …).
func isFlagValue(name, v string) bool {
	if name == "s3-path-style" {
		return backends.CheckPathStyle(v) == nil
	}
	return slices.Contains(flagValues[name], v)
}

// completionHelp is what 'pbsdirect completion --help' says.
const completionHelp = `Print the completion script of a shell on standard output. It completes
commands, flags, the values of flags such as --output-format and --progress
and, read from --store (or PBSDIRECT_STORE) within 5 s, the namespaces (--ns),
groups and snapshots (SNAPSHOT) and a snapshot's archives (ARCHIVE).
Run 'pbsdirect completion SHELL --help' for where to install it.`
