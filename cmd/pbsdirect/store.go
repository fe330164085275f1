package main

import (
	"context"
	"io"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// openAll resolves what the store flags name for a command: the namespace,
// the key (nil without --keyfile) and the opened store (see openStore).
// The caller closes the store.
func (sf *storeFlags) openAll(ctx context.Context, stderr io.Writer, create bool, concurrency int) (index.Namespace, *crypto.Config, chunkstore.Store, error) {
	ns, err := sf.namespace()
	if err != nil {
		return nil, nil, nil, err
	}
	cc, err := sf.loadKey(ctx, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := openStore(ctx, sf, create, concurrency)
	if err != nil {
		return nil, nil, nil, err
	}
	return ns, cc, store, nil
}

// openStore opens the store named by --store: a directory, s3://… or gs://….
// create prepares a new datastore (backup); concurrency is the number of
// requests kept in flight, which sizes bucket connection pools.
func openStore(ctx context.Context, sf *storeFlags, create bool, concurrency int) (chunkstore.Store, error) {
	layout, err := backends.ParseLayout(sf.bucketLayout)
	if err != nil {
		return nil, usagef("--bucket-layout: %v", err)
	}
	ps, err := sf.pathStyle()
	if err != nil {
		return nil, err
	}
	if sf.s3Print != "" {
		if _, err := s3store.ParseFingerprint(sf.s3Print); err != nil {
			return nil, usagef("--s3-fingerprint: %v", err)
		}
	}
	opts := backends.Options{
		Create:      create,
		Concurrency: concurrency,
		Layout:      layout,
		S3:          s3store.Options{Endpoint: sf.s3Endpoint, Region: sf.s3Region, PathStyle: ps, Fingerprint: sf.s3Print},
	}
	return backends.Open(ctx, sf.store, opts)
}

// storeLayout names a bucket store's layout ("pbs4-s3" or "plain"), or "" for a directory.
func storeLayout(s chunkstore.Store) string {
	if l, ok := backends.LayoutOf(s); ok {
		return l.String()
	}
	return ""
}
