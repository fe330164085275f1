package bucket

import (
	"context"
	"fmt"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// LayoutReporter is a bucket store: it tells the layout it reads and
// writes (never LayoutAuto). Both bucket backends implement it, a
// directory store does not.
type LayoutReporter interface {
	Layout() Layout
}

// StatsReporter is a store that runs its requests under a Policy and
// tells what the policy did (retries, throttled answers, stalls, the
// limit on GETs in flight). Both bucket backends implement it.
type StatsReporter interface {
	PolicyStats() Stats
}

// Lister is the listing DetectLayout needs of a bucket backend, each call
// made under the backend's request policy and its errors mapped to the
// chunkstore errors (ErrNotFound, ErrDenied, ErrUnavailable).
type Lister interface {
	// AnyObject reports whether any object's key starts with prefix.
	AnyObject(ctx context.Context, prefix string) (bool, error)
	// ListLevel lists one level below prefix (delimiter "/"): the common
	// prefixes ("dir/") and the objects' keys, both with prefix cut off.
	ListLevel(ctx context.Context, prefix string) (dirs, objects []string, err error)
}

// ListerReporter is a bucket store that lends its Lister, under its own
// request policy, for walking the bucket beyond its datastore (finding
// datastores: chunkstore/discover). Both bucket backends implement it.
type ListerReporter interface {
	// Lister returns a Lister of the store's whole bucket: its prefixes
	// are keys from the bucket root, not from the store's prefix.
	Lister() Lister
}

// Detect sets k.Layout to the layout of the datastore below k.Prefix,
// detected by DetectLayout through l (where names the store in messages,
// its URL; forced and create as there). On an error k is left as it was.
func (k *Keys) Detect(ctx context.Context, l Lister, where string, forced Layout, create bool) error {
	layout, err := DetectLayout(ctx, l, where, k.root(), forced, create)
	if err != nil {
		return err
	}
	k.Layout = layout
	return nil
}

// DetectLayout returns the layout of the datastore at root (the key
// prefix with a trailing '/', or "" for a whole bucket), named where in
// messages (its URL). forced other than LayoutAuto is taken as it is
// (after one listing, which proves the bucket can be read). Otherwise
// objects below root+".cnt/" make it LayoutPBS4; for reading (create
// false) objects below root+".chunks/" make it LayoutPlain, and no objects
// in either return an error wrapping chunkstore.ErrNotFound (no
// datastore). A writer (create) keeps an existing plain copy plain (any
// other directory than .chunks, a .lock or .gc-status object) and
// otherwise takes LayoutPBS4. Listing errors are returned naming where.
func DetectLayout(ctx context.Context, l Lister, where, root string, forced Layout, create bool) (Layout, error) {
	listErr := func(err error) error { return fmt.Errorf("%s: listing bucket: %w", where, err) }
	hasCnt, err := l.AnyObject(ctx, root+ContentDir+"/")
	if err != nil {
		return LayoutAuto, listErr(err)
	}
	switch {
	case forced != LayoutAuto:
		return forced, nil
	case hasCnt:
		return LayoutPBS4, nil
	case !create:
		// A plain copy of a datastore has chunks; anything else is not a datastore.
		hasChunks, err := l.AnyObject(ctx, root+".chunks/")
		if err != nil {
			return LayoutAuto, listErr(err)
		}
		if !hasChunks {
			return LayoutAuto, fmt.Errorf("%s: %w: no PBS datastore at this prefix (neither %s.cnt/ nor %s.chunks/ holds objects); --store must name the datastore's prefix",
				where, chunkstore.ErrNotFound, root, root)
		}
		return LayoutPlain, nil
	}
	// Writer: keep an existing plain copy plain, else use PBS 4's layout.
	dirs, objects, err := l.ListLevel(ctx, root)
	if err != nil {
		return LayoutAuto, listErr(err)
	}
	layout := LayoutPBS4
	for _, d := range dirs {
		switch d {
		case ".chunks/":
		case ContentDir + "/":
			// Written since the first listing (a concurrent writer).
			return LayoutPBS4, nil
		default:
			layout = LayoutPlain
		}
	}
	for _, o := range objects {
		if o == ".lock" || o == ".gc-status" {
			layout = LayoutPlain
		}
	}
	return layout, nil
}
