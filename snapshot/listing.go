package snapshot

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// ManifestReads is how many manifests Entries reads at once.
const ManifestReads = 16

// Entry is one snapshot of a listing, from its manifest (the JSON form of
// 'snapshots'). Every string but Snapshot's parts may come from the store:
// a printer escapes them.
type Entry struct {
	Snapshot    string      `json:"snapshot"` // TYPE/ID/TIME
	Namespace   string      `json:"ns,omitempty"`
	BackupType  string      `json:"backup-type"`
	BackupID    string      `json:"backup-id"`
	BackupTime  int64       `json:"backup-time"` // epoch seconds
	Files       []EntryFile `json:"files"`
	Size        uint64      `json:"size"` // bytes: sum of the archive sizes (image sizes for .fidx)
	Fingerprint string      `json:"fingerprint,omitempty"`
	Comment     string      `json:"comment,omitempty"`      // first line of the snapshot notes
	Verified    string      `json:"verification,omitempty"` // last verify state: ok or failed
	Protected   bool        `json:"protected"`              // the .protected marker (prune keeps it)
	Owner       string      `json:"owner,omitempty"`        // the group's owner
	Error       string      `json:"error,omitempty"`        // manifest unreadable
}

// EntryFile is one archive listed in a manifest.
type EntryFile struct {
	Name      string `json:"filename"`
	CryptMode string `json:"crypt-mode"`
	Size      uint64 `json:"size"` // bytes (§6.2)
}

// Entries lists the finished snapshots of namespace ns of store, and with
// maxDepth not 0 those of the namespaces that many levels below it (-1:
// all), each described from its manifest (ManifestReads at once). A
// manifest that cannot be read gives an entry with Error set; a snapshot
// removed since it was listed (a prune) is left out and told to removed. An
// empty listing of a namespace that does not exist is ErrNoNamespace.
func Entries(ctx context.Context, store chunkstore.Store, ns index.Namespace, maxDepth int, removed func(index.Snapshot)) ([]Entry, error) {
	namespaces := []index.Namespace{ns}
	if maxDepth != 0 {
		var err error
		if namespaces, err = Namespaces(ctx, store, ns, maxDepth); err != nil {
			return nil, err
		}
	}
	var list []Info
	for _, n := range namespaces {
		l, err := List(ctx, store, n)
		if err != nil {
			return nil, err
		}
		list = append(list, l...)
	}
	if len(list) == 0 {
		if err := Exists(ctx, store, ns); err != nil {
			return nil, err
		}
	}
	return describe(ctx, store, list, removed)
}

// GroupEntries lists the finished snapshots of the one backup group typ/id
// of namespace ns of store (ListGroup), each described from its manifest
// as Entries does. A group without a finished snapshot is an error
// wrapping ErrNoSnapshot (missing data), as Resolve says of it.
func GroupEntries(ctx context.Context, store chunkstore.Store, ns index.Namespace, typ, id string, removed func(index.Snapshot)) ([]Entry, error) {
	list, err := ListGroup(ctx, store, ns, typ, id)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, NoGroupError(ctx, store, ns, typ, id)
	}
	return describe(ctx, store, list, removed)
}

// describe describes each snapshot of list from its manifest (Entries).
func describe(ctx context.Context, store chunkstore.Store, list []Info, removed func(index.Snapshot)) ([]Entry, error) {
	owners := groupOwners(ctx, store, list)
	entries := make([]Entry, len(list))
	// A plain group, not WithContext: an unreadable manifest is recorded in
	// its entry and must not stop the others; only ctx ending fails the listing.
	var g errgroup.Group
	g.SetLimit(ManifestReads)
	read := func(i int) error {
		s := list[i].Snapshot
		e := Entry{Snapshot: s.String(), Namespace: s.NS.String(), BackupType: s.Type, BackupID: s.ID, BackupTime: s.Time, Files: []EntryFile{},
			Protected: Protected(list[i].Files), Owner: owners[s.GroupDir()]}
		var m *index.Manifest
		r, err := OpenSnapshot(ctx, store, s, nil)
		if err == nil {
			m = r.Manifest()
		}
		switch {
		case errors.Is(err, ErrNoSnapshot):
			// Listed, then pruned before its manifest was read.
			removed(s)
			return ctx.Err()
		case err != nil:
			e.Error = err.Error()
		default:
			for _, f := range m.Files {
				e.Files = append(e.Files, EntryFile{Name: f.Filename, CryptMode: string(f.CryptMode), Size: f.Size})
				e.Size += f.Size
			}
			if fp, ok, _ := m.KeyFingerprint(); ok {
				e.Fingerprint = fp.String()
			}
			e.Comment, e.Verified = Notes(m), VerifyState(m)
		}
		entries[i] = e
		return ctx.Err()
	}
	for i := range list {
		g.Go(func() error { return read(i) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.Snapshot != "" {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// groupOwners reads the owner of each group in list once, keyed by group
// directory; an unreadable owner file is left out (the listing goes on).
func groupOwners(ctx context.Context, store chunkstore.Store, list []Info) map[string]string {
	owners := map[string]string{}
	for _, i := range list {
		g := i.Snapshot.GroupDir()
		if _, done := owners[g]; !done {
			owners[g], _ = GroupOwner(ctx, store, i.Snapshot)
		}
	}
	return owners
}

// Group is one backup group of a listing (the JSON form of 'groups').
type Group struct {
	Group      string `json:"group"` // TYPE/ID, with ns/… for a namespace
	Namespace  string `json:"ns,omitempty"`
	BackupType string `json:"backup-type"`
	BackupID   string `json:"backup-id"`
	LastBackup int64  `json:"last-backup"`  // epoch seconds of the newest finished snapshot
	Count      int    `json:"backup-count"` // finished snapshots
	Owner      string `json:"owner,omitempty"`
	Comment    string `json:"comment,omitempty"` // first line of the group notes
}

// Groups lists the backup groups of namespace ns of store that have a
// finished snapshot, in List's order, with their owner and notes. An empty
// listing of a namespace that does not exist is ErrNoNamespace.
func Groups(ctx context.Context, store chunkstore.Store, ns index.Namespace) ([]Group, error) {
	list, err := List(ctx, store, ns)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		if err := Exists(ctx, store, ns); err != nil {
			return nil, err
		}
	}
	var groups []Group
	for _, i := range list {
		s := i.Snapshot
		if n := len(groups); n > 0 && groups[n-1].BackupType == s.Type && groups[n-1].BackupID == s.ID {
			groups[n-1].Count++
			groups[n-1].LastBackup = max(groups[n-1].LastBackup, s.Time)
			continue
		}
		owner, err := GroupOwner(ctx, store, s)
		if err != nil {
			return nil, err
		}
		comment, err := GroupComment(ctx, store, s)
		if err != nil {
			return nil, err
		}
		groups = append(groups, Group{Group: s.GroupDir(), Namespace: ns.String(), BackupType: s.Type, BackupID: s.ID,
			LastBackup: s.Time, Count: 1, Owner: owner, Comment: comment})
	}
	return groups, nil
}
