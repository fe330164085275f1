package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pbsdirect/pbsdirect/snapshot"
)

// snapshotEntry is one line of the snapshot listing.
type snapshotEntry struct {
	Snapshot   string         `json:"snapshot"` // TYPE/ID/TIME
	Namespace  string         `json:"ns,omitempty"`
	BackupType string         `json:"backup-type"`
	BackupID   string         `json:"backup-id"`
	BackupTime int64          `json:"backup-time"` // epoch seconds
	Files      []snapshotFile `json:"files"`
	Size       uint64         `json:"size"` // bytes stored in the snapshot directory
}

// snapshotFile is one file of a snapshot directory with its size in bytes.
type snapshotFile struct {
	Name string `json:"filename"`
	Size int64  `json:"size"`
}

func cmdSnapshots(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("snapshots", "[flags]", stderr)
	var sf storeFlags
	sf.register(fs)
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
	store, err := openStore(ctx, &sf, false, 8)
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := snapshot.List(ctx, store, ns)
	if err != nil {
		return err
	}
	entries := make([]snapshotEntry, 0, len(list))
	for _, i := range list {
		e := snapshotEntry{Snapshot: i.Snapshot.String(), Namespace: sf.ns, BackupType: i.Snapshot.Type, BackupID: i.Snapshot.ID, BackupTime: i.Snapshot.Time}
		for _, f := range i.Files {
			e.Files = append(e.Files, snapshotFile{Name: f.Path, Size: f.Size})
			e.Size += uint64(f.Size)
		}
		entries = append(entries, e)
	}
	if sf.json() {
		return writeJSON(stdout, entries)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "snapshot\tsize\tfiles")
	for _, e := range entries {
		var names []string
		for _, f := range e.Files {
			if f.Name != snapshot.ManifestName {
				names = append(names, f.Name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Snapshot, humanBytes(e.Size), strings.Join(names, " "))
	}
	return tw.Flush()
}
