// Package backends opens a chunkstore.Store from a store specification as
// given on the command line (--store): "s3://bucket[/prefix]" (S3 or any
// S3-compatible service), "gs://bucket[/prefix]" (Google Cloud Storage), or
// anything else as a local datastore directory.
package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/gcsstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

// Layout is the layout of a datastore in a bucket (see s3store.Layout).
type Layout = bucket.Layout

// Bucket layouts.
const (
	LayoutAuto  = bucket.LayoutAuto
	LayoutPBS4  = bucket.LayoutPBS4
	LayoutPlain = bucket.LayoutPlain
)

// ParseLayout parses a --bucket-layout value: "auto", "pbs4-s3" or "plain".
func ParseLayout(s string) (Layout, error) { return bucket.ParseLayout(s) }

// Options configures Open. The zero value opens for reading with every
// backend's defaults.
type Options struct {
	// Create opens for writing (backup): a missing local datastore is
	// created (with its lock held until Close); an empty bucket prefix gets
	// the PBS 4 layout.
	Create bool
	// Concurrency is the number of requests the caller keeps in flight;
	// bucket backends size their connection pools for it (0: backend
	// default).
	Concurrency int
	// S3 holds the S3 flags (--s3-endpoint, --s3-region, --s3-path-style).
	// Its Concurrency, Create and Layout are taken from this struct.
	S3 s3store.Options
	// GCS holds the GCS settings. Its Concurrency, Create and Layout are
	// taken from this struct.
	GCS gcsstore.Options
	// Layout forces a bucket layout (LayoutAuto: detect).
	Layout Layout
	// Policy is the request policy of both bucket backends (--io-timeout,
	// --retry-for, backoff); zero fields take bucket's defaults.
	Policy bucket.Options
}

// IsRemote reports whether spec names a bucket ("s3://…" or "gs://…")
// rather than a local directory.
func IsRemote(spec string) bool {
	return strings.HasPrefix(spec, "s3://") || strings.HasPrefix(spec, "gs://")
}

// Open opens the store named by spec: s3://bucket[/prefix] with s3store,
// gs://bucket[/prefix] with gcsstore, anything else with
// chunkstore.OpenLocal(spec, opts.Create). Errors wrap chunkstore.ErrNotFound
// or chunkstore.ErrDenied where that is the cause (missing bucket or
// directory, refused credentials). The bucket stores also implement
// bucket.LayoutReporter and bucket.StatsReporter.
func Open(ctx context.Context, spec string, opts Options) (chunkstore.Store, error) {
	return OpenWrite(ctx, spec, opts)
}

// OpenWrite opens the store named by spec as Open does, for writing (a
// backup, a report written to a store): every backend is a
// chunkstore.WriteStore. With opts.Create a missing datastore is created.
func OpenWrite(ctx context.Context, spec string, opts Options) (chunkstore.WriteStore, error) {
	switch {
	case strings.HasPrefix(spec, "s3://"):
		o := opts.S3
		o.Create, o.Concurrency, o.Layout = opts.Create, opts.Concurrency, opts.Layout
		o.Policy = opts.Policy
		s, err := s3store.OpenURL(ctx, spec, o)
		if err != nil {
			return nil, err
		}
		return s, nil
	case strings.HasPrefix(spec, "gs://"):
		o := opts.GCS
		o.Create, o.Concurrency, o.Layout = opts.Create, opts.Concurrency, opts.Layout
		o.Policy = opts.Policy
		s, err := gcsstore.OpenURL(ctx, spec, o)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	l, err := chunkstore.OpenLocal(spec, opts.Create)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// OpenChain opens every spec (see Open) and returns them as a
// chunkstore.Chain in the order given, the order of preference. A store
// that cannot be opened for a reason outside the data (chunkstore.Outside:
// unreachable, credentials refused) or that is not there (a directory
// without a datastore, a bucket that does not exist: ErrNotFound, marked
// chunkstore.StoreMissing so that it is outside too) is left out of the
// chain and reported to skipped, so that the others still serve; the
// chain then proves nothing missing (chunkstore.NewPartialChain). If that
// leaves none, the first such error is returned. Any other failure (a bad
// URL) closes those opened and is returned, naming the store.
func OpenChain(ctx context.Context, specs []string, opts Options, skipped func(spec string, err error)) (*chunkstore.Chain, error) {
	var members []chunkstore.Store
	var firstOutside error
	var leftOut []error
	for _, spec := range specs {
		s, err := Open(ctx, spec, opts)
		if err != nil && errors.Is(err, chunkstore.ErrNotFound) && !chunkstore.Outside(err) {
			err = chunkstore.StoreMissing(fmt.Errorf("%w (a disk not mounted? a bucket or prefix not created yet?)", err))
		}
		if err != nil && chunkstore.Outside(err) && ctx.Err() == nil {
			leftOut = append(leftOut, fmt.Errorf("--store %s left out: %w", spec, err))
			if firstOutside == nil {
				firstOutside = err
			}
			if skipped != nil {
				skipped(spec, err)
			}
			continue
		}
		if err != nil {
			for _, m := range members {
				m.Close()
			}
			return nil, err
		}
		members = append(members, s)
	}
	if len(members) == 0 {
		return nil, firstOutside
	}
	return chunkstore.NewPartialChain(members, leftOut)
}

// LayoutOf returns the bucket layout of s, and false for stores without one
// (local directories).
func LayoutOf(s chunkstore.Store) (Layout, bool) {
	if c, ok := s.(chunkstore.MemberStore); ok {
		// A chain: the layout of its first bucket.
		for _, m := range c.Members() {
			if l, ok := LayoutOf(m); ok {
				return l, true
			}
		}
		return LayoutAuto, false
	}
	if l, ok := s.(bucket.LayoutReporter); ok {
		return l.Layout(), true
	}
	return LayoutAuto, false
}

// RetriesOf returns how many request retries s has made (0 for stores that
// do not retry).
func RetriesOf(s chunkstore.Store) int64 {
	return PolicyStatsOf(s).Retries
}

// PolicyStatsOf returns the request policy's counts of a bucket store, or
// of a store that forwards them (a chain sums its members'); zero for
// stores without one (directories).
func PolicyStatsOf(s chunkstore.Store) bucket.Stats {
	if c, ok := s.(chunkstore.MemberStore); ok {
		var sum bucket.Stats
		for _, m := range c.Members() {
			sum = sum.Add(PolicyStatsOf(m))
		}
		return sum
	}
	if r, ok := s.(bucket.StatsReporter); ok {
		return r.PolicyStats()
	}
	return bucket.Stats{}
}
