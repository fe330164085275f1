package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// openAll resolves what the store flags name for a command: the namespace,
// the snapshot key policy (see newKeys) and the opened store (see
// openStore). The caller closes the store.
func (sf *storeFlags) openAll(ctx context.Context, stderr io.Writer, kp keyPolicy, concurrency int) (index.Namespace, *snapshot.Keys, chunkstore.Store, error) {
	nsa, err := sf.nsArg()
	if err != nil {
		return nil, nil, nil, err
	}
	keys, err := newKeys(ctx, sf, kp, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := openStore(ctx, sf, false, concurrency)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, w := range sf.skipped {
		fmt.Fprintln(stderr, index.DisplayText(w))
	}
	sf.rate.warn(stderr)
	noteFollowed(stderr, store)
	warnDisagreement(stderr, store)
	ns, err := nsa.resolve(ctx, store, false)
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	return ns, keys, store, nil
}

// noteFollowed says on stderr what opening a bucket store corrected on its
// own (the bucket's region, path-style addressing), so that the flag can be
// given and the detour skipped next time.
func noteFollowed(stderr io.Writer, s chunkstore.Store) {
	f, ok := s.(chunkstore.RedirectFollower)
	if !ok {
		return
	}
	for _, what := range f.Followed() {
		var msg string
		if r, ok := strings.CutPrefix(what, "region "); ok {
			msg = fmt.Sprintf("the bucket of %s is in region %s; followed (give --s3-region %s, or region=%s on its --store, to skip the detour)", s, r, r, r)
		} else {
			msg = fmt.Sprintf("the endpoint's virtual-host name for the bucket of %s does not resolve; using %s (give --s3-path-style, or path-style=true on its --store, to skip the detour)", s, what)
		}
		// The region comes from the server's answer: escaped.
		fmt.Fprintf(stderr, "pbsdirect: note: %s\n", index.DisplayText(msg))
	}
}

// warnDisagreement has the store say on stderr, escaped for the terminal,
// what its listings leave out or disagree on: a chain of stores (several
// --store) where its members disagree (chunkstore.Warner), a bucket
// store the keys it could not decode.
func warnDisagreement(stderr io.Writer, s chunkstore.Store) {
	say := func(msg string) { fmt.Fprintln(stderr, index.DisplayText(msg)) }
	stores := []chunkstore.Store{s}
	if c, ok := s.(chunkstore.MemberStore); ok {
		stores = append(stores, c.Members()...)
	}
	for _, m := range stores {
		if w, ok := m.(chunkstore.Warner); ok {
			w.WarnTo(say)
		}
	}
}

// openStore opens the store named by --store: a directory, s3://… or gs://…,
// or a chain of them (--store given several times). create prepares a new
// datastore (backup); concurrency is the number of requests kept in
// flight, which sizes bucket connection pools.
func openStore(ctx context.Context, sf *storeFlags, create bool, concurrency int) (chunkstore.Store, error) {
	opts, err := sf.backendOptions(create, concurrency)
	if err != nil {
		return nil, err
	}
	if len(sf.stores) > 1 {
		if create {
			return nil, usagef("--store given %d times: a backup writes to one store", len(sf.stores))
		}
		return backends.OpenChain(ctx, sf.stores, opts, func(spec string, err error) {
			sf.skipped = append(sf.skipped, fmt.Sprintf("pbsdirect: warning: --store %s left out, the other stores serve: %s", backends.DisplaySpec(spec), withoutStore(spec, err)))
			sf.leftOut = append(sf.leftOut, backends.DisplaySpec(spec))
		})
	}
	s, err := backends.Open(ctx, sf.store, opts)
	return s, withNear(ctx, sf.store, opts, missingStore(err))
}

// withoutStore returns the text of err, about the store spec, without
// the store it begins with (the backends' errors do), for a message that
// names the store itself.
func withoutStore(spec string, err error) string {
	why := err.Error()
	for _, name := range []string{backends.DisplaySpec(spec), backends.BaseSpec(spec)} {
		if rest, ok := strings.CutPrefix(why, name+": "); ok {
			return rest
		}
	}
	return why
}

// openBackupStore opens the one store --store names for a backup to
// write to, creating a new datastore (see openStore).
func openBackupStore(ctx context.Context, sf *storeFlags, concurrency int) (chunkstore.WriteStore, error) {
	if len(sf.stores) > 1 {
		return nil, usagef("--store given %d times: a backup writes to one store", len(sf.stores))
	}
	opts, err := sf.backendOptions(true, concurrency)
	if err != nil {
		return nil, err
	}
	s, err := backends.OpenWrite(ctx, sf.store, opts)
	return s, missingStore(err)
}

// missingStore returns err, opening a store, as a *storeMissingError when
// the store is not there (chunkstore.ErrNotFound).
func missingStore(err error) error {
	if errors.Is(err, chunkstore.ErrNotFound) {
		return &storeMissingError{err}
	}
	return err
}

// backendOptions returns what the store flags set for opening a store
// (backends.Settings.Options); a setting that does not parse is a usage
// error.
func (sf *storeFlags) backendOptions(create bool, concurrency int) (backends.Options, error) {
	if sf.bucketHTTP == "" {
		// Given empty: not the default "auto" (an empty setting means "not given").
		return backends.Options{}, usageOf(&backends.SettingError{Setting: "--bucket-http", Err: errors.New(`invalid HTTP version "" (want auto, 1.1 or 2)`)})
	}
	opts, err := sf.settings().Options(create, concurrency)
	if err != nil {
		return opts, usageOf(err)
	}
	return opts, nil
}

// settings returns the store flags as backends.Settings.
func (sf *storeFlags) settings() backends.Settings {
	return backends.Settings{Layout: sf.bucketLayout, S3Endpoint: sf.s3Endpoint, S3Region: sf.s3Region, S3PathStyle: sf.s3PathStyle,
		S3Fingerprint: sf.s3Print, IOTimeout: sf.ioTimeout, RetryFor: sf.retryFor, Watch: &sf.retries,
		Limit: sf.rate.limiter, HTTP: sf.bucketHTTP}
}

// storeMissingError marks a --store that is not there: a directory that
// does not exist or holds no datastore (an unmounted disk leaves an empty
// mount point), a bucket that does not exist. It exits 3, a cause outside
// the data: mounting the disk or creating the bucket and retrying can help.
type storeMissingError struct{ err error }

// Error is the opening error with a hint at the usual causes.
func (e *storeMissingError) Error() string {
	return e.err.Error() + " (a disk not mounted? a bucket or prefix not created yet?)"
}

// Unwrap returns the opening error (it wraps chunkstore.ErrNotFound).
func (e *storeMissingError) Unwrap() error { return e.err }

// storeCounts returns what each store of a chain (several --store)
// contributed, or nil for one store.
func storeCounts(s chunkstore.Store) []chunkstore.MemberStats {
	if c, ok := s.(chunkstore.FallThrough); ok {
		return c.Stats()
	}
	return nil
}

// storeLayout names a bucket store's layout ("pbs4-s3" or "plain"), or "" for a directory.
func storeLayout(s chunkstore.Store) string {
	if l, ok := backends.LayoutOf(s); ok {
		return l.String()
	}
	return ""
}
