package main

import (
	"context"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// openStore opens the store named by --store; create prepares a new
// datastore for backup. concurrency sizes connection pools.
func openStore(ctx context.Context, sf *storeFlags, create bool, concurrency int) (chunkstore.Store, error) {
	if isRemote(sf.store) {
		return nil, usagef("bucket stores are not wired yet")
	}
	return chunkstore.OpenLocal(sf.store, create)
}
