package snapshot

import (
	"context"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// Summary counts what a datastore holds (the JSON form of a datastore of
// 'datastores').
type Summary struct {
	Namespaces int `json:"namespaces"` // the root namespace included
	Groups     int `json:"groups"`     // backup groups with a finished snapshot, over all namespaces
	Snapshots  int `json:"snapshots"`  // finished snapshots, over all namespaces
	// Newest is the newest finished snapshot ("ns/…/TYPE/ID/TIME" below
	// the root namespace), "" when there is none.
	Newest     string `json:"newest,omitempty"`
	NewestTime int64  `json:"newest-time,omitempty"` // its backup time, epoch seconds
}

// Summarize counts the namespaces (Namespaces, all levels), backup groups
// and finished snapshots (List of each namespace) of store and finds its
// newest snapshot. It lists the store's content, no manifest is read.
func Summarize(ctx context.Context, store chunkstore.Store) (Summary, error) {
	namespaces, err := Namespaces(ctx, store, index.Namespace{}, -1)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Namespaces: len(namespaces)}
	for _, ns := range namespaces {
		list, err := List(ctx, store, ns)
		if err != nil {
			return Summary{}, err
		}
		groups := map[string]bool{}
		for _, i := range list {
			s := i.Snapshot
			groups[s.GroupDir()] = true
			sum.Snapshots++
			if sum.Newest == "" || s.Time > sum.NewestTime {
				sum.Newest, sum.NewestTime = s.String(), s.Time
			}
		}
		sum.Groups += len(groups)
	}
	return sum, nil
}
