package snapshot

import (
	"context"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// Bounds of the look for a group in other namespaces (NoGroupError).
const (
	// elsewhereNamespaces is how many namespaces are looked in at most
	// (one listing each).
	elsewhereNamespaces = 64
	// elsewhereShown is how many namespaces holding the group are named.
	elsewhereShown = 3
)

// NoGroupError returns the error for the backup group typ/id having no
// finished snapshot in namespace ns of store. It wraps ErrNoSnapshot
// (missing data) and, when the group has finished snapshots in other
// namespaces, names up to 3 of them, as --ns takes them: "(it exists in
// namespace lab: --ns lab)". That look is bounded: one listing of the
// store's namespaces and one of the group in each of the first 64; a look
// that fails adds nothing.
func NoGroupError(ctx context.Context, store chunkstore.Store, ns index.Namespace, typ, id string) error {
	return fmt.Errorf("%w: group %s/%s has no finished snapshot in %s of %s%s", ErrNoSnapshot, typ, id, NamespaceName(ns), store, elsewhere(ctx, store, ns, typ, id))
}

// elsewhere is the hint of NoGroupError: " (it exists in namespace lab:
// --ns lab; in the root namespace: no --ns)", or "" when the bounded look
// finds the group finished in no other namespace.
func elsewhere(ctx context.Context, store chunkstore.Store, ns index.Namespace, typ, id string) string {
	all, err := Namespaces(ctx, store, nil, -1)
	if err != nil {
		return ""
	}
	var found []string
	for _, n := range all[:min(len(all), elsewhereNamespaces)] {
		if sameNS(n, ns) {
			continue
		}
		list, err := ListGroup(ctx, store, n, typ, id)
		if err != nil {
			if ctx.Err() != nil {
				return ""
			}
			continue
		}
		for _, i := range list {
			if i.Snapshot.Type == typ && i.Snapshot.ID == id {
				if n.IsRoot() {
					found = append(found, "the root namespace: no --ns")
				} else {
					found = append(found, fmt.Sprintf("namespace %s: --ns %s", index.DisplayText(n.String()), index.DisplayText(n.String())))
				}
				break
			}
		}
		if len(found) == elsewhereShown {
			break
		}
	}
	if len(found) == 0 {
		return ""
	}
	return " (it exists in " + strings.Join(found, "; in ") + ")"
}
