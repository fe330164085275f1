package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
	Fingerprint string         `json:"key-fingerprint,omitempty"`
	Error       string         `json:"error,omitempty"` // manifest unreadable
}

// snapshotFile is one archive listed in a manifest.
type snapshotFile struct {
	Name      string `json:"filename"`
	CryptMode string `json:"crypt-mode"`
	Size      uint64 `json:"size"` // bytes (§6.2)
}

// manifestReads is how many manifests are read at once for a listing.
const manifestReads = 16

func cmdSnapshots(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("snapshots", "[flags]", stderr)
	var sf storeFlags
	sf.register(fs)
	defer func() {
		if sf.json() {
			err = failJSON(err)
		}
	}()
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("snapshots takes no arguments (use --ns for a namespace)")
	}
	if err := sf.check(); err != nil {
		return err
	}
	ns, err := sf.namespace()
	if err != nil {
		return err
	}
	store, err := openStore(ctx, &sf, false, manifestReads)
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := snapshot.List(ctx, store, ns)
	if err != nil {
		return err
	}
	entries := make([]snapshotEntry, len(list))
	idx := make([]int, len(list))
	for i := range idx {
		idx[i] = i
	}
	err = snapshot.ForEach(idx, manifestReads, func(i int) error {
		s := list[i].Snapshot
		e := snapshotEntry{Snapshot: s.String(), Namespace: sf.ns, BackupType: s.Type, BackupID: s.ID, BackupTime: s.Time, Files: []snapshotFile{}}
		m, err := snapshot.ReadManifest(ctx, store, s)
		switch {
		case errors.Is(err, snapshot.ErrNoSnapshot):
			// Listed, then pruned before its manifest was read.
			fmt.Fprintf(stderr, "pbsdirect: note: %s was removed while running (pruned since it was listed): left out\n", s)
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
		}
		entries[i] = e
		return ctx.Err()
	})
	if err != nil {
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
	fmt.Fprintln(tw, "snapshot\tsize\tcrypt\tfiles")
	for _, e := range entries {
		if e.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\tmanifest unreadable: %s\n", e.Snapshot, e.Error)
			continue
		}
		var names []string
		crypt := "none"
		for _, f := range e.Files {
			names = append(names, f.Name)
			if f.CryptMode != "none" {
				crypt = f.CryptMode
			}
		}
		if e.Fingerprint != "" {
			crypt += " " + e.Fingerprint[:23]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Snapshot, humanBytes(e.Size), crypt, strings.Join(names, " "))
	}
	return tw.Flush()
}
