package main

import (
	flag "github.com/spf13/pflag"

	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// snapshotEntry is one snapshot of the listing, from its manifest.
type snapshotEntry = snapshot.Entry

// manifestReads is how many manifests are read at once for a listing.
const manifestReads = snapshot.ManifestReads

func cmdSnapshots(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.registerLocation(fs)
	sf.registerOutput(fs)
	maxDepth := fs.Int("max-depth", 0, "also list the snapshots of the namespaces this many levels below --ns (0..7; -1: all)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
		if err := checkListingDepth(*maxDepth); err != nil {
			return err
		}
		if fs.NArg() > 1 {
			return usagef("snapshots takes at most one GROUP (TYPE/ID; use --ns for a namespace)")
		}
		var group index.Snapshot
		if fs.NArg() == 1 {
			if group, err = parseGroupArg(fs.Arg(0)); err != nil {
				return err
			}
			if fs.Changed("max-depth") {
				return usagef("--max-depth is for namespaces, not with a GROUP")
			}
		}
		ns, store, err := openListingStore(ctx, &sf, stderr)
		if err != nil {
			return err
		}
		noteFollowed(stderr, store)
		defer store.Close()
		removed := func(s index.Snapshot) {
			fmt.Fprintf(stderr, "pbsdirect: note: %s was removed while running (pruned since it was listed): left out\n", index.DisplayText(s.String()))
		}
		var entries []snapshotEntry
		if group.Type == "" {
			entries, err = snapshot.Entries(ctx, store, ns, *maxDepth, removed)
		} else {
			if len(group.NS) == 0 {
				group.NS = ns
			} else if len(ns) != 0 && !slices.Equal(group.NS, ns) {
				return usagef("GROUP %s is in namespace %q, not in the --ns given (%q)", fs.Arg(0), group.NS.String(), ns.String())
			}
			entries, err = snapshot.GroupEntries(ctx, store, group.NS, group.Type, group.ID, removed)
		}
		if err != nil {
			return err
		}
		if sf.json() {
			return cmp.Or(writeJSON(stdout, entries), listingIncomplete(&sf, store))
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "snapshot\tsize\tcrypt\tverified\tprotected\tfiles\tcomment")
		for _, e := range entries {
			if e.Error != "" {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tmanifest unreadable: %s\t\n", e.Snapshot, index.DisplayText(e.Error))
				continue
			}
			var names []string
			crypt := "none"
			for _, f := range e.Files {
				names = append(names, index.DisplayText(f.Name))
				if f.CryptMode != "none" {
					crypt = f.CryptMode
				}
			}
			if e.Fingerprint != "" {
				crypt += " " + e.Fingerprint[:23]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Snapshot, humanBytes(e.Size), crypt, orDash(index.DisplayText(e.Verified)), yesNo(e.Protected), strings.Join(names, " "), index.DisplayText(e.Comment))
		}
		return cmp.Or(tw.Flush(), listingIncomplete(&sf, store))
	}
}

// parseGroupArg parses the GROUP argument of 'snapshots': TYPE/ID, with
// the namespace prefix snapshot names print ("ns/prod/vm/100"); anything
// else is a usage error.
func parseGroupArg(arg string) (index.Snapshot, error) {
	g, err := index.ParseSnapshotRef(arg)
	if err != nil || g.Time != 0 {
		return g, usagef("GROUP %q: want TYPE/ID like vm/100 (ns/NAME/… before it for a namespace)", arg)
	}
	return g, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// snapshotsCommand is 'pbsdirect snapshots'.
func snapshotsCommand() commandSpec {
	return commandSpec{
		use:   "snapshots [flags] [GROUP]",
		short: "list the finished snapshots of a namespace or a group (--max-depth for those below)",
		long: `List the finished snapshots of a namespace (--max-depth: and those below), or
of the one backup group GROUP (TYPE/ID, as proxmox-backup-client snapshot list
GROUP), with their archives, size, encryption, protection, notes and last
verify state as PBS recorded them. A GROUP with no finished snapshot exits 1
(missing), as a restore of it does.`,
		example: `  pbsdirect snapshots --store /mnt/ds
  pbsdirect snapshots --store /mnt/ds vm/110
  pbsdirect snapshots --store /mnt/ds --ns prod --max-depth -1 --output-format json-pretty`,
		build:    cmdSnapshots,
		complete: completeNothing,
	}
}
