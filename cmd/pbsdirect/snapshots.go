package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// snapshotEntry is one snapshot of the listing, from its manifest.
type snapshotEntry struct {
	Snapshot    string         `json:"snapshot"` // TYPE/ID/TIME
	Namespace   string         `json:"ns,omitempty"`
	BackupType  string         `json:"backup-type"`
	BackupID    string         `json:"backup-id"`
	BackupTime  int64          `json:"backup-time"` // epoch seconds
	Files       []snapshotFile `json:"files"`
	Size        uint64         `json:"size"` // bytes: sum of the archive sizes (image sizes for .fidx)
	Fingerprint string         `json:"fingerprint,omitempty"`
	Comment     string         `json:"comment,omitempty"`      // first line of the snapshot notes
	Verified    string         `json:"verification,omitempty"` // last verify state: ok or failed
	Protected   bool           `json:"protected"`              // the .protected marker (prune keeps it)
	Owner       string         `json:"owner,omitempty"`        // the group's owner
	Error       string         `json:"error,omitempty"`        // manifest unreadable
}

// snapshotFile is one archive listed in a manifest.
type snapshotFile struct {
	Name      string `json:"filename"`
	CryptMode string `json:"crypt-mode"`
	Size      uint64 `json:"size"` // bytes (§6.2)
}

// manifestReads is how many manifests are read at once for a listing.
const manifestReads = 16

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
		namespaces := []index.Namespace{ns}
		if *maxDepth != 0 {
			if namespaces, err = snapshot.Namespaces(ctx, store, ns, *maxDepth); err != nil {
				return err
			}
		}
		var list []snapshot.Info
		for _, n := range namespaces {
			l, err := snapshot.List(ctx, store, n)
			if err != nil {
				return err
			}
			list = append(list, l...)
		}
		if len(list) == 0 {
			if err := snapshot.Exists(ctx, store, ns); err != nil {
				return err
			}
		}
		owners := groupOwners(ctx, store, list)
		entries := make([]snapshotEntry, len(list))
		// A plain group, not WithContext: an unreadable manifest is recorded in
		// its entry and must not stop the others; only ctx ending fails the listing.
		var g errgroup.Group
		g.SetLimit(manifestReads)
		read := func(i int) error {
			s := list[i].Snapshot
			e := snapshotEntry{Snapshot: s.String(), Namespace: s.NS.String(), BackupType: s.Type, BackupID: s.ID, BackupTime: s.Time, Files: []snapshotFile{},
				Protected: snapshot.Protected(list[i].Files), Owner: owners[s.GroupDir()]}
			m, err := snapshot.ReadManifest(ctx, store, s)
			switch {
			case errors.Is(err, snapshot.ErrNoSnapshot):
				// Listed, then pruned before its manifest was read.
				fmt.Fprintf(stderr, "pbsdirect: note: %s was removed while running (pruned since it was listed): left out\n", index.DisplayText(s.String()))
				return ctx.Err()
			case err != nil:
				e.Error = err.Error()
			default:
				for _, f := range m.Files {
					e.Files = append(e.Files, snapshotFile{Name: f.Filename, CryptMode: string(f.CryptMode), Size: f.Size})
					e.Size += f.Size
				}
				if fp, ok, _ := m.KeyFingerprint(); ok {
					e.Fingerprint = fp.String()
				}
				e.Comment, e.Verified = snapshot.Notes(m), snapshot.VerifyState(m)
			}
			entries[i] = e
			return ctx.Err()
		}
		for i := range list {
			g.Go(func() error { return read(i) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		kept := entries[:0]
		for _, e := range entries {
			if e.Snapshot != "" {
				kept = append(kept, e)
			}
		}
		entries = kept
		if sf.json() {
			return writeJSON(stdout, entries)
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
		return tw.Flush()
	}
}

// groupOwners reads the owner of each group in list once, keyed by group
// directory; an unreadable owner file is left out (the listing goes on).
func groupOwners(ctx context.Context, store chunkstore.Store, list []snapshot.Info) map[string]string {
	owners := map[string]string{}
	for _, i := range list {
		g := i.Snapshot.GroupDir()
		if _, done := owners[g]; !done {
			owners[g], _ = snapshot.GroupOwner(ctx, store, i.Snapshot)
		}
	}
	return owners
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
