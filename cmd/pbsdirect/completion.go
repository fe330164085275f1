package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// completionTimeout bounds the store reads of one completion request: a
// shell waiting on a slow bucket is worse than no candidates.
const completionTimeout = 5 * time.Second

// maxCandidates bounds the candidates one request offers (a store with
// more groups and snapshots than that offers the first ones).
const maxCandidates = 1000

// flagValues are the values the shell offers for the flags that take one
// of a fixed set (a command that has no such flag offers nothing).
var flagValues = map[string][]string{
	"output-format": {cli.FormatText, cli.FormatJSON, cli.FormatJSONPretty},
	"progress":      {"auto", "bar", "lines", "none"},
	"on-missing":    {"fail", "zero"},
	"on-corrupt":    {"fail", "zero"},
	"kdf":           {"scrypt", "pbkdf2", "none"},
	"s3-path-style": {"auto", "true", "false"},
	"bucket-layout": {"auto", "pbs4-s3", "plain"},
	"crypt-mode":    {"none", "encrypt", "sign-only"},
	"backup-type":   {"vm", "ct", "host"},
}

// completeFlags completes --ns of the commands that take --store with the
// store's namespaces (the fixed values are flagValues).
func completeFlags(c *cobra.Command) {
	if c.Flags().Lookup("ns") != nil && c.Flags().Lookup("store") != nil {
		c.RegisterFlagCompletionFunc("ns", completeNamespace)
	}
}

// completeNamespace offers the namespaces of --store (as --ns takes them:
// prod/db) that start with prefix; --ns itself is ignored here.
func completeNamespace(c *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return storeCandidates(c, func(ctx context.Context, _ index.Namespace, store chunkstore.Store) ([]snapshot.Candidate, error) {
		return snapshot.NamespaceCandidates(ctx, store, prefix, maxCandidates)
	})
}

// completeSnapshot offers the groups (TYPE/ID) and snapshots (TYPE/ID/TIME)
// of --store and --ns as the first argument; the second is a file name
// (mount's MOUNTPOINT), and there is no third.
func completeSnapshot(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return snapshotCandidates(c, toComplete)
	case 1:
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeOneSnapshot is completeSnapshot for a command that takes at most
// one argument, a snapshot or group (verify, serve-nbd).
func completeOneSnapshot(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return snapshotCandidates(c, toComplete)
}

// completeEncryptedKey completes key import-with-master-key's arguments:
// ENCRYPTED-KEY is a snapshot of --store when --store is given, else a
// file; MASTER-KEY and PATH are files.
func completeEncryptedKey(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0 && (c.Flags().Changed("store") || os.Getenv("PBSDIRECT_STORE") != ""):
		return snapshotCandidates(c, toComplete)
	case len(args) < 3:
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeSnapshotArchive is completeSnapshot for SNAPSHOT ARCHIVE TARGET
// (restore): the second argument is one of the snapshot's archives (read
// from its manifest), the third a file name.
func completeSnapshotArchive(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeArchiveOf(c, args, toComplete, func(string) bool { return true })
}

// completeSnapshotImage is completeSnapshotArchive for drill, which takes
// disk images (fixed indexes) only.
func completeSnapshotImage(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeArchiveOf(c, args, toComplete, func(name string) bool { return index.KindOf(name) == index.KindFixed })
}

// completeArchiveOf completes SNAPSHOT ARCHIVE TARGET with the archives
// that keep says a command takes.
func completeArchiveOf(c *cobra.Command, args []string, toComplete string, keep func(string) bool) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return snapshotCandidates(c, toComplete)
	case 1:
		return archiveCandidates(c, args[0], toComplete, keep)
	case 2:
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// snapshotCandidates lists the groups and snapshots that start with prefix.
func snapshotCandidates(c *cobra.Command, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return storeCandidates(c, func(ctx context.Context, ns index.Namespace, store chunkstore.Store) ([]snapshot.Candidate, error) {
		return snapshot.RefCandidates(ctx, store, ns, prefix, maxCandidates)
	})
}

// archiveCandidates lists the archives of snapshot ref (its manifest's
// files) that start with prefix and that keep keeps.
func archiveCandidates(c *cobra.Command, ref, prefix string, keep func(string) bool) ([]cobra.Completion, cobra.ShellCompDirective) {
	return storeCandidates(c, func(ctx context.Context, ns index.Namespace, store chunkstore.Store) ([]snapshot.Candidate, error) {
		return snapshot.ArchiveCandidates(ctx, store, ns, ref, prefix, keep, maxCandidates)
	})
}

// storeCandidates opens the first store that c's parsed flags name
// (--store, --ns and the bucket flags; the first is the preferred one, and
// another that does not answer must not hold up the shell) and returns the
// candidates list gives for it. All of it, reading and parsing, is given
// completionTimeout: then the candidates are dropped (the process ends with
// the request). Nothing is printed: a completion that fails offers nothing,
// and no file names in their place either (a shell falls back to those on
// an error directive).
func storeCandidates(c *cobra.Command, list func(ctx context.Context, ns index.Namespace, store chunkstore.Store) ([]snapshot.Candidate, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	cands, err := readCandidates(c, list)
	if err != nil {
		cobra.CompDebugln(err.Error(), false)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return cands, cobra.ShellCompDirectiveNoFileComp
}

// readCandidates is storeCandidates' work: the candidates, or why there are
// none.
func readCandidates(c *cobra.Command, list func(ctx context.Context, ns index.Namespace, store chunkstore.Store) ([]snapshot.Candidate, error)) ([]cobra.Completion, error) {
	var sf storeFlags
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	sf.registerLocation(fs)
	sf.registerOutput(fs)
	cli.CopyFlags(fs, c.Flags())
	sf.stores = sf.stores[:min(len(sf.stores), 1)]
	sf.outputFormat = cli.FormatText // whatever PROXMOX_OUTPUT_FORMAT says: candidates are text
	if err := sf.check(); err != nil {
		return nil, err
	}
	nsa, err := sf.nsArg()
	if err != nil {
		return nil, err
	}
	return cli.Bounded(c.Context(), completionTimeout, func(ctx context.Context) ([]cobra.Completion, error) {
		store, err := openStore(ctx, &sf, false, manifestReads)
		if err != nil {
			return nil, err
		}
		defer store.Close()
		ns, err := nsa.resolve(ctx, store, false)
		if err != nil {
			return nil, err
		}
		list, err := list(ctx, ns, store)
		var cands []cobra.Completion
		for _, c := range list {
			if c.Desc == "" {
				cands = append(cands, c.Name)
			} else {
				cands = append(cands, cobra.CompletionWithDesc(c.Name, c.Desc))
			}
		}
		return cands, err
	})
}
