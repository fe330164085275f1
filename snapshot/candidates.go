package snapshot

import (
	"context"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// Candidate is a name offered to complete a command-line argument, with
// what it is when that helps ("" otherwise).
type Candidate struct {
	Name string
	Desc string
}

// NamespaceCandidates returns the namespaces of store (as --ns takes them,
// "prod/db"; not the root) that start with prefix, at most max of them.
func NamespaceCandidates(ctx context.Context, store chunkstore.Store, prefix string, max int) ([]Candidate, error) {
	list, err := Namespaces(ctx, store, nil, -1)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, ns := range list[:min(len(list), max)] {
		if name := ns.String(); name != "" && strings.HasPrefix(name, prefix) {
			out = append(out, Candidate{Name: name})
		}
	}
	return out, nil
}

// RefCandidates returns the groups (TYPE/ID, standing for their latest
// snapshot) and snapshots (TYPE/ID/TIME) of namespace ns that start with
// prefix, in listing order, at most max of them.
func RefCandidates(ctx context.Context, store chunkstore.Store, ns index.Namespace, prefix string, max int) ([]Candidate, error) {
	list, err := List(ctx, store, ns)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	lastGroup := ""
	for _, i := range list {
		if len(out) >= max {
			break
		}
		s := i.Snapshot
		group := s.Type + "/" + s.ID
		if group != lastGroup && strings.HasPrefix(group, prefix) {
			out = append(out, Candidate{Name: group, Desc: "the latest snapshot of the group"})
		}
		lastGroup = group
		if name := group + "/" + index.FormatTime(s.Time); strings.HasPrefix(name, prefix) {
			out = append(out, Candidate{Name: name})
		}
	}
	return out, nil
}

// ArchiveCandidates returns the archives of snapshot ref in ns (its
// manifest's files, read through a Reader without keys) that start with
// prefix and that keep keeps, at most max of them; an encrypted or signed
// one says its crypt mode.
func ArchiveCandidates(ctx context.Context, store chunkstore.Store, ns index.Namespace, ref, prefix string, keep func(string) bool, max int) ([]Candidate, error) {
	src, err := Open(ctx, store, ns, ref, nil)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, f := range src.Manifest().Files {
		if len(out) >= max {
			break
		}
		switch {
		case !strings.HasPrefix(f.Filename, prefix), !keep(f.Filename):
		case f.CryptMode == index.CryptNone:
			out = append(out, Candidate{Name: f.Filename})
		default:
			out = append(out, Candidate{Name: f.Filename, Desc: "crypt mode " + string(f.CryptMode)})
		}
	}
	return out, nil
}
