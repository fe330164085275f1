package main

import (
	"context"
	"errors"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// nsArg is a --ns argument with its readings (snapshot.NSArg), settled
// against the store by resolve.
type nsArg struct{ snapshot.NSArg }

// parseNSArg parses a --ns argument ("" is the root namespace). It returns
// a usage error when no reading is a valid namespace.
func parseNSArg(s string) (nsArg, error) {
	a, err := snapshot.ParseNSArg(s)
	if err != nil {
		return nsArg{a}, usagef("--ns: %v", err)
	}
	return nsArg{a}, nil
}

// resolve returns the namespace the argument means in store
// (snapshot.NSArg.Resolve; create for backup); an ambiguous argument the
// store does not settle is a usage error.
func (a nsArg) resolve(ctx context.Context, store chunkstore.Store, create bool) (index.Namespace, error) {
	ns, err := a.Resolve(ctx, store, create)
	if errors.Is(err, snapshot.ErrAmbiguousNamespace) {
		return nil, usageOf(err)
	}
	return ns, err
}
