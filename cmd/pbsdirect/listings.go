package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// groupEntry is one backup group of the 'groups' listing.
type groupEntry = snapshot.Group

func cmdGroups(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.registerLocation(fs)
	sf.registerOutput(fs)
	maxDepth := fs.Int("max-depth", 0, "also list the groups of the namespaces this many levels below --ns (0..7; -1: all)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkListingDepth(*maxDepth); err != nil {
			return err
		}
		ns, store, err := openListing(ctx, fs, &sf, args, "use --ns for a namespace", stderr)
		if err != nil {
			return err
		}
		defer store.Close()
		groups, err := groupsBelow(ctx, store, ns, *maxDepth)
		if err != nil {
			return err
		}
		if sf.json() {
			if groups == nil {
				groups = []groupEntry{}
			}
			return cmp.Or(writeJSON(stdout, groups), listingIncomplete(&sf, store))
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "group\tlast backup\tsnapshots\towner\tcomment")
		for _, g := range groups {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", g.Group, index.FormatTime(g.LastBackup), g.Count, orDash(index.DisplayText(g.Owner)), index.DisplayText(g.Comment))
		}
		return cmp.Or(tw.Flush(), listingIncomplete(&sf, store))
	}
}

// checkListingDepth checks the --max-depth of a listing (groups,
// snapshots, namespaces): 0 to index.MaxNamespaceDepth levels, as PBS
// takes, or -1 for every level below; anything else is a usage error.
func checkListingDepth(d int) error {
	if d < -1 || d > index.MaxNamespaceDepth {
		return usagef("--max-depth must be 0..%d (-1: every level), not %d", index.MaxNamespaceDepth, d)
	}
	return nil
}

// groupsBelow lists the groups of namespace ns (snapshot.Groups) and, with
// maxDepth not 0, of the namespaces that many levels below it (-1: all),
// namespace by namespace in name order.
func groupsBelow(ctx context.Context, store chunkstore.Store, ns index.Namespace, maxDepth int) ([]groupEntry, error) {
	if maxDepth == 0 {
		return snapshot.Groups(ctx, store, ns)
	}
	namespaces, err := snapshot.Namespaces(ctx, store, ns, maxDepth)
	if err != nil {
		return nil, err
	}
	var all []groupEntry
	for _, n := range namespaces {
		g, err := snapshot.Groups(ctx, store, n)
		if err != nil {
			return nil, err
		}
		all = append(all, g...)
	}
	return all, nil
}

// namespaceEntry is one namespace of the 'namespaces' listing.
type namespaceEntry struct {
	Namespace string `json:"ns"` // "" for the root namespace
	Path      string `json:"path,omitempty"`
}

func cmdNamespaces(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.registerLocation(fs)
	sf.registerOutput(fs)
	maxDepth := fs.Int("max-depth", -1, "list namespaces at most this many levels below --ns (0..7; -1: all)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkListingDepth(*maxDepth); err != nil {
			return err
		}
		ns, store, err := openListing(ctx, fs, &sf, args, "use --ns for where to start", stderr)
		if err != nil {
			return err
		}
		defer store.Close()
		list, err := snapshot.Namespaces(ctx, store, ns, *maxDepth)
		if err != nil {
			return err
		}
		entries := make([]namespaceEntry, len(list))
		for i, n := range list {
			entries[i] = namespaceEntry{Namespace: n.String(), Path: n.Path()}
		}
		if sf.json() {
			return cmp.Or(writeJSON(stdout, entries), listingIncomplete(&sf, store))
		}
		for _, e := range entries {
			name := e.Namespace
			if name == "" {
				name = "(root)"
			}
			fmt.Fprintln(stdout, name)
		}
		return listingIncomplete(&sf, store)
	}
}

// openListing checks the arguments of a listing command (groups,
// namespaces, snapshots: flags only; hint says what to use instead of an
// argument), checks the flags and opens the store and namespace to list;
// what several stores disagree on, and a store of them left out, is said
// on stderr (the listing then exits 3: listingIncomplete).
func openListing(ctx context.Context, fs *flag.FlagSet, sf *storeFlags, args []string, hint string, stderr io.Writer) (index.Namespace, chunkstore.Store, error) {
	if fs.NArg() != 0 {
		return nil, nil, usagef("%s takes no arguments (%s)", fs.Name(), hint)
	}
	return openListingStore(ctx, sf, stderr)
}

// openListingStore is openListing once the arguments are checked.
func openListingStore(ctx context.Context, sf *storeFlags, stderr io.Writer) (index.Namespace, chunkstore.Store, error) {
	if err := sf.check(); err != nil {
		return nil, nil, err
	}
	nsa, err := sf.nsArg()
	if err != nil {
		return nil, nil, err
	}
	store, err := openStore(ctx, sf, false, manifestReads)
	if err != nil {
		return nil, nil, err
	}
	sayLeftOut(stderr, sf)
	warnDisagreement(stderr, store)
	ns, err := nsa.resolve(ctx, store, false)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return ns, store, nil
}

// groupsCommand is 'pbsdirect groups'.
func groupsCommand() commandSpec {
	return commandSpec{
		use:   "groups [flags]",
		short: "list the backup groups of a namespace (--max-depth for those below)",
		long: `List the backup groups (TYPE/ID) of a namespace (--max-depth N: and of the
namespaces N levels below it, -1 all) with their snapshot count, owner and the
first line of their notes.`,
		example: `  pbsdirect groups --store /mnt/ds --ns prod
  pbsdirect groups --store /mnt/ds --max-depth -1`,
		build:    cmdGroups,
		complete: completeNothing,
	}
}

// namespacesCommand is 'pbsdirect namespaces'.
func namespacesCommand() commandSpec {
	return commandSpec{
		use:      "namespaces [flags]",
		short:    "list the namespaces of a datastore (or below --ns)",
		long:     `List the namespaces of a datastore, or those below --ns.`,
		example:  `  pbsdirect namespaces --store s3://backups/pbs --max-depth 1`,
		build:    cmdNamespaces,
		complete: completeNothing,
	}
}
