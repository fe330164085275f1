package verify

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Scope selects the snapshots of a run.
type Scope struct {
	// NS is the namespace (nil: the root).
	NS index.Namespace
	// MaxDepth is how many levels of child namespaces below NS are
	// included, as proxmox-backup-client's --max-depth: 0 is NS alone, a
	// negative value every level (--all-namespaces from the root).
	MaxDepth int
	// Ref is "" (every snapshot), a group "TYPE/ID" (every snapshot of it)
	// or one snapshot "TYPE/ID/TIME", in NS.
	Ref string
	// Latest, with a group Ref (or none), keeps each group's newest
	// snapshot only.
	Latest bool
}

// Selection is what a Scope resolved to: the namespaces looked at and the
// finished snapshots in them, namespace by namespace, oldest first within a
// group.
type Selection struct {
	Namespaces []index.Namespace
	Snapshots  []index.Snapshot
	// Note says why Snapshots is empty for a namespace that exists and
	// holds no snapshot (that is no failure); "" otherwise.
	Note string
}

// Select resolves sc against store. A snapshot Ref that does not exist, or
// a group without a finished snapshot, returns an error wrapping
// snapshot.ErrNoSnapshot; a namespace that does not exist one wrapping
// snapshot.ErrNoNamespace. A namespace (tree) that exists and holds no
// finished snapshot is an empty Selection with its Note.
func Select(ctx context.Context, store chunkstore.Store, sc Scope) (Selection, error) {
	var sel Selection
	if sc.Ref != "" {
		ref, err := index.ParseSnapshotRef(sc.Ref)
		if err != nil {
			return sel, err
		}
		if !ref.IsGroup() {
			s, err := snapshot.Resolve(ctx, store, sc.NS, sc.Ref)
			if err != nil {
				return sel, err
			}
			return Selection{Namespaces: []index.Namespace{s.NS}, Snapshots: []index.Snapshot{s}}, nil
		}
		if len(ref.NS) == 0 {
			ref.NS = sc.NS
		} else if len(sc.NS) != 0 && ref.NS.String() != sc.NS.String() {
			return sel, fmt.Errorf("%w: %q is in namespace %q, not in the namespace given (%q)", index.ErrBadName, sc.Ref, ref.NS, sc.NS)
		}
		list, err := snapshot.ListGroup(ctx, store, ref.NS, ref.Type, ref.ID)
		if err != nil {
			return sel, err
		}
		sel.Namespaces = []index.Namespace{ref.NS}
		for _, i := range list {
			if i.Snapshot.Type == ref.Type && i.Snapshot.ID == ref.ID {
				sel.Snapshots = append(sel.Snapshots, i.Snapshot)
			}
		}
		if sc.Latest && len(sel.Snapshots) > 0 {
			sel.Snapshots = sel.Snapshots[len(sel.Snapshots)-1:]
		}
		if len(sel.Snapshots) == 0 {
			return sel, snapshot.NoGroupError(ctx, store, ref.NS, ref.Type, ref.ID)
		}
		return sel, nil
	}
	nss, err := Namespaces(ctx, store, sc.NS, sc.MaxDepth)
	if err != nil {
		return sel, err
	}
	sel.Namespaces = nss
	for _, ns := range nss {
		list, err := snapshot.List(ctx, store, ns)
		if err != nil {
			return sel, err
		}
		for i, s := range list {
			if sc.Latest && i+1 < len(list) && list[i+1].Snapshot.Type == s.Snapshot.Type && list[i+1].Snapshot.ID == s.Snapshot.ID {
				continue
			}
			sel.Snapshots = append(sel.Snapshots, s.Snapshot)
		}
	}
	if len(sel.Snapshots) == 0 {
		if err := snapshot.Exists(ctx, store, sc.NS); err != nil {
			return sel, err
		}
		sel.Note = "no snapshots in " + snapshot.NamespaceName(sc.NS)
		if sc.MaxDepth != 0 {
			sel.Note += " or below it"
		} else {
			sel.Note += " (--max-depth to include its children)"
		}
	}
	return sel, nil
}

// Namespaces returns ns and those of its descendants that hold snapshot
// files, at most maxDepth levels below it (negative: any depth), sorted.
func Namespaces(ctx context.Context, store chunkstore.Store, ns index.Namespace, maxDepth int) ([]index.Namespace, error) {
	out := []index.Namespace{ns}
	if maxDepth == 0 {
		return out, nil
	}
	files, err := store.ListFiles(ctx, path.Join(ns.Path(), "ns"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{ns.String(): true}
	for _, f := range files {
		s, ok := index.ParseSnapshotDir(path.Dir(f.Path))
		if !ok || len(s.NS) <= len(ns) || !slices.Equal(s.NS[:len(ns)], ns) {
			continue
		}
		if maxDepth > 0 && len(s.NS)-len(ns) > maxDepth {
			continue
		}
		if k := s.NS.String(); !seen[k] {
			seen[k] = true
			out = append(out, s.NS)
		}
	}
	slices.SortFunc(out, func(a, b index.Namespace) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}
