package main

import (
	flag "github.com/spf13/pflag"

	"cmp"
	"context"
	"fmt"
	"io"
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
	maxDepth := fs.Int("max-depth", 0, "also list the snapshots of the namespaces this many levels below --ns (-1: all)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
		ns, store, err := openListing(ctx, fs, &sf, args, "use --ns for a namespace", stderr)
		if err != nil {
			return err
		}
		noteFollowed(stderr, store)
		defer store.Close()
		entries, err := snapshot.Entries(ctx, store, ns, *maxDepth, func(s index.Snapshot) {
			fmt.Fprintf(stderr, "pbsdirect: note: %s was removed while running (pruned since it was listed): left out\n", index.DisplayText(s.String()))
		})
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
		use:   "snapshots [flags]",
		short: "list the finished snapshots of a namespace (--max-depth for those below)",
		long: `List the finished snapshots of a namespace (--max-depth: and those below), with
their archives, size, encryption, protection, notes and last verify state as
PBS recorded them.`,
		example: `  pbsdirect snapshots --store /mnt/ds
  pbsdirect snapshots --store /mnt/ds --ns prod --max-depth -1 --output-format json-pretty`,
		build:    cmdSnapshots,
		complete: completeNothing,
	}
}
