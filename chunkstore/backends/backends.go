// Package backends opens a chunkstore.Store from a store specification as
// given on the command line (--store): "s3://bucket[/prefix]" (S3 or any
// S3-compatible service), "gs://bucket[/prefix]" (Google Cloud Storage), or
// anything else as a local datastore directory.
//
// Where a new backend goes: its package lies below chunkstore (as s3store
// and gcsstore do) and implements chunkstore.Store, and
// chunkstore.WriteStore only if backups may write to it. It is reached
// from --store by one entry in schemes below: its URL scheme, how it opens
// for reading (Open: every command that reads a snapshot) and, for a
// backend that can be written, how it opens for writing (OpenWrite: backup,
// reports and state written to a bucket); a read-only backend leaves
// openWrite nil and OpenWrite refuses it. IsRemote and CheckSpec read the
// same table, so the commands need no change; its settings (endpoint,
// credentials) go in Options and Settings, and those a single store may
// carry as query parameters of its specification in the entry's params
// (storeparams.go).
package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/gcsstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
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
	// Limit, when set, caps the bytes read and the requests made by every
	// store opened with these options, directories included (--rate,
	// --burst, --rate-requests); Policy.Limit is taken from here.
	Limit *ratelimit.Limiter
}

// scheme is one bucket backend as --store names it: "NAME://bucket[/prefix]".
type scheme struct {
	// name is the URL scheme, lower case ("s3").
	name string
	// open opens spec (which starts with name + "://") for reading.
	open func(ctx context.Context, spec string, opts Options) (chunkstore.Store, error)
	// openWrite opens spec for writing; nil for a read-only backend.
	openWrite func(ctx context.Context, spec string, opts Options) (chunkstore.WriteStore, error)
	// paramTable returns the per-store settings the backend takes as query
	// parameters of its specification (see StoreOptions); nil: none.
	paramTable func() []param
}

// schemes returns the bucket backends; a specification with none of their
// schemes is a local datastore directory.
func schemes() []scheme {
	return []scheme{
		{name: "s3", open: reading(openS3), openWrite: writing(openS3), paramTable: s3Params},
		{name: "gs", open: reading(openGCS), openWrite: writing(openGCS), paramTable: gcsParams},
	}
}

// schemeOf returns the bucket backend whose scheme spec starts with
// ("s3://…"), and false for a local directory.
func schemeOf(spec string) (scheme, bool) { return schemeIn(schemes(), spec) }

// schemeIn returns the backend of table whose scheme spec starts with.
func schemeIn(table []scheme, spec string) (scheme, bool) {
	for _, b := range table {
		if strings.HasPrefix(spec, b.name+"://") {
			return b, true
		}
	}
	return scheme{}, false
}

// openS3 opens an s3:// specification with s3store, with opts.S3 and the
// common settings of opts.
func openS3(ctx context.Context, spec string, opts Options) (*s3store.Store, error) {
	o := opts.S3
	o.Create, o.Concurrency, o.Layout = opts.Create, opts.Concurrency, opts.Layout
	o.Policy = opts.Policy
	o.Policy.Limit = opts.Limit
	return s3store.OpenURL(ctx, spec, o)
}

// openGCS opens a gs:// specification with gcsstore, with opts.GCS and the
// common settings of opts.
func openGCS(ctx context.Context, spec string, opts Options) (*gcsstore.Store, error) {
	o := opts.GCS
	o.Create, o.Concurrency, o.Layout = opts.Create, opts.Concurrency, opts.Layout
	o.Policy = opts.Policy
	o.Policy.Limit = opts.Limit
	return gcsstore.OpenURL(ctx, spec, o)
}

// reading adapts a backend's opener to scheme.open (no typed nil on error).
func reading[S chunkstore.Store](open func(context.Context, string, Options) (S, error)) func(context.Context, string, Options) (chunkstore.Store, error) {
	return func(ctx context.Context, spec string, opts Options) (chunkstore.Store, error) {
		s, err := open(ctx, spec, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// writing adapts a writable backend's opener to scheme.openWrite.
func writing[S chunkstore.WriteStore](open func(context.Context, string, Options) (S, error)) func(context.Context, string, Options) (chunkstore.WriteStore, error) {
	return func(ctx context.Context, spec string, opts Options) (chunkstore.WriteStore, error) {
		s, err := open(ctx, spec, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// IsRemote reports whether spec names a bucket ("s3://…" or "gs://…")
// rather than a local directory.
func IsRemote(spec string) bool {
	_, ok := schemeOf(spec)
	return ok
}

// Open opens the store named by spec for reading: s3://bucket[/prefix]
// with s3store, gs://bucket[/prefix] with gcsstore, anything else with
// chunkstore.OpenLocal(spec, opts.Create). A bucket specification's query
// parameters are its own settings, applied over opts (StoreOptions; a
// *ParamError when they do not parse); errors opening such a store name it
// as DisplaySpec prints it. Errors wrap chunkstore.ErrNotFound
// or chunkstore.ErrDenied where that is the cause (missing bucket or
// directory, refused credentials). The bucket stores also implement
// bucket.LayoutReporter and bucket.StatsReporter.
func Open(ctx context.Context, spec string, opts Options) (chunkstore.Store, error) {
	return openIn(ctx, schemes(), spec, opts)
}

// openIn is Open over the backends of table.
func openIn(ctx context.Context, table []scheme, spec string, opts Options) (chunkstore.Store, error) {
	if b, ok := schemeIn(table, spec); ok {
		base, o, err := b.settle(spec, opts)
		if err != nil {
			return nil, err
		}
		s, err := b.open(ctx, base, o)
		return s, nameStore(spec, base, err)
	}
	return openLocal(spec, opts)
}

// nameStore returns err, opening the store spec (base without its
// settings), prefixed with spec as DisplaySpec prints it when spec carries
// settings of its own: the stores of a chain may share a bucket's name
// and differ in endpoint or credentials alone.
func nameStore(spec, base string, err error) error {
	if err == nil || spec == base {
		return err
	}
	return &namedError{name: DisplaySpec(spec), base: base, err: err}
}

// namedError is an error opening the store base, named by name (its
// specification with its settings): "NAME: why", where why is err's text
// without the leading "BASE: " the backends start their errors with.
type namedError struct {
	name, base string
	err        error
}

// Error returns "NAME: why".
func (e *namedError) Error() string {
	msg := e.err.Error()
	if rest, ok := strings.CutPrefix(msg, e.base+": "); ok {
		msg = rest
	}
	return e.name + ": " + msg
}

// Unwrap returns the error of opening the store.
func (e *namedError) Unwrap() error { return e.err }

// OpenWrite opens the store named by spec as Open does, for writing (a
// backup, a report written to a store). With opts.Create a missing
// datastore is created. A backend that cannot be written is refused.
func OpenWrite(ctx context.Context, spec string, opts Options) (chunkstore.WriteStore, error) {
	return openWriteIn(ctx, schemes(), spec, opts)
}

// openWriteIn is OpenWrite over the backends of table.
func openWriteIn(ctx context.Context, table []scheme, spec string, opts Options) (chunkstore.WriteStore, error) {
	if b, ok := schemeIn(table, spec); ok {
		if b.openWrite == nil {
			return nil, fmt.Errorf("--store %s: %s:// stores are read-only", DisplaySpec(spec), b.name)
		}
		base, o, err := b.settle(spec, opts)
		if err != nil {
			return nil, err
		}
		s, err := b.openWrite(ctx, base, o)
		return s, nameStore(spec, base, err)
	}
	return openLocal(spec, opts)
}

// openLocal opens a local datastore directory (chunkstore.OpenLocal).
func openLocal(spec string, opts Options) (chunkstore.WriteStore, error) {
	l, err := chunkstore.OpenLocal(spec, opts.Create)
	if err != nil {
		return nil, err
	}
	l.LimitReads(opts.Limit)
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
			leftOut = append(leftOut, fmt.Errorf("--store %s left out: %w", DisplaySpec(spec), err))
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
