package bucket

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// MaxBadCopyPages is the most listing requests a backend makes to look
// for the copies of a chunk kept aside (BadCopyPrefix), each for a page of
// the store's listing page size (1000 keys by default; a server may send
// fewer): other keys under the prefix (temporary uploads, a tool's own
// suffixes) cannot hide the copies unless there are more than about 10,000
// of them, and then the search says it stopped (ErrBadCopySearchCut)
// instead of proving the copies absent.
const MaxBadCopyPages = 10

// ErrBadCopySearchCut is wrapped by the error of ListBadCopies when the
// listing had more pages than MaxBadCopyPages: whether a copy kept aside
// is among the keys not listed is unknown. It wraps
// chunkstore.ErrUnavailable (chunkstore.Outside, exit code 3), never a
// proof that the chunk is missing.
var ErrBadCopySearchCut = fmt.Errorf("%w: search for .bad copies cut short", chunkstore.ErrUnavailable)

// BadCopyPage lists one page of the keys under a prefix: token is the
// continuation token of the request (empty for the first), or, when
// useStartAfter is true, startAfter the key to list after. It returns the
// page's keys in the server's order, whether the server marked the page
// truncated, and the continuation token for the next page.
type BadCopyPage func(ctx context.Context, token, startAfter string, useStartAfter bool) (keys []string, truncated bool, next string, err error)

// ListBadCopies returns the names of the copies of d kept aside
// (chunkstore.BadName, generation order, as BadCopyNames) by paging
// through the keys under BadCopyPrefix(d) with page, each page checked by
// a Listing (provider names the API, where the listed prefix, for
// errors). Every key that is not exactly "<64 hex>.<0-9>.bad" for d is
// ignored. It makes at most MaxBadCopyPages requests; a listing with more
// fails with ErrBadCopySearchCut. Errors of page are returned as they are;
// a listing that cannot be completed fails with ErrListing.
func (k Keys) ListBadCopies(ctx context.Context, d crypto.Digest, provider, where string, page BadCopyPage) ([]string, error) {
	prefix := k.BadCopyPrefix(d)
	l := Listing{Provider: provider, Where: where, Prefix: prefix}
	var keys []string
	for n := 1; ; n++ {
		token, after, useAfter := l.Request()
		got, truncated, next, err := page(ctx, token, after, useAfter)
		if err != nil {
			return nil, err
		}
		for _, key := range got {
			keep, err := l.Key(key)
			if err != nil {
				return nil, err
			}
			if keep {
				keys = append(keys, key)
			}
		}
		more, err := l.EndPage(truncated, next)
		if err != nil {
			return nil, err
		}
		if !more {
			return k.BadCopyNames(d, keys), nil
		}
		if n == MaxBadCopyPages {
			return nil, fmt.Errorf("%w: %s of %s: more than %d pages (%d keys listed, none after %q): whether a copy kept aside is among the keys not listed is unknown",
				ErrBadCopySearchCut, provider, where, MaxBadCopyPages, len(keys), l.last)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// BadCopyPrefix returns the key prefix that lists the copies of the chunk
// for d kept aside as damaged: "<chunk key>." (FORMAT.md §8.1: PBS 4 keeps
// them as "<prefix>/.chunks/<4hex>/<digest>.N.bad").
func (k Keys) BadCopyPrefix(d crypto.Digest) string { return k.Chunk(d) + "." }

// BadCopyKey returns the key of the copy name kept aside (a
// chunkstore.BadName), and false when name is not one.
func (k Keys) BadCopyKey(name string) (string, bool) {
	d, ok := chunkstore.ParseBadName(name)
	if !ok {
		return "", false
	}
	return path.Dir(k.Chunk(d)) + "/" + name, true
}

// BadCopyNames returns the names (chunkstore.BadName, generation order,
// each once) of the keys listed under BadCopyPrefix(d) that are copies of
// d kept aside; every other key is ignored.
func (k Keys) BadCopyNames(d crypto.Digest, keys []string) []string {
	dir := path.Dir(k.Chunk(d)) + "/"
	var names []string
	for _, key := range keys {
		name, ok := strings.CutPrefix(key, dir)
		if !ok {
			continue
		}
		if got, ok := chunkstore.ParseBadName(name); ok && got == d && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names) // one digit: lexical order is generation order
	return names
}
