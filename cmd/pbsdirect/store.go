package main

import (
	"context"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

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
	opts := backends.Options{
		Create:      create,
		Concurrency: concurrency,
		Layout:      layout,
		S3:          s3store.Options{Endpoint: sf.s3Endpoint, Region: sf.s3Region, PathStyle: ps},
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
