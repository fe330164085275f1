package gcsstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

var _ chunkstore.BadCopies = (*Store)(nil)

// ListBadCopies returns the names of the copies of d kept aside (see
// chunkstore.BadCopies), paging with objects.list through the names that
// start with the chunk's key and a dot (bucket.Keys.ListBadCopies: at most
// bucket.MaxBadCopyPages requests of Options.ListPageSize names, each
// under the bucket policy; a longer listing fails with
// bucket.ErrBadCopySearchCut, exit code 3).
func (s *Store) ListBadCopies(ctx context.Context, d crypto.Digest) ([]string, error) {
	prefix := s.keys.BadCopyPrefix(d)
	names, err := s.keys.ListBadCopies(ctx, d, "GCS objects.list", s.objURL(prefix), func(ctx context.Context, token, after string, useAfter bool) ([]string, bool, string, error) {
		q := &storage.Query{Prefix: prefix}
		if useAfter {
			q.StartOffset = after
		}
		q.SetAttrSelection([]string{"Name"})
		var page []*storage.ObjectAttrs
		var next string
		err := s.do(ctx, func(ctx context.Context) (err error) {
			page = page[:0]
			next, err = iterator.NewPager(s.bucket.Objects(ctx, q), s.listPageSize(), token).NextPage(&page)
			return err
		})
		if err != nil {
			return nil, false, "", mapErr(err)
		}
		keys := make([]string, 0, len(page))
		for _, a := range page {
			keys = append(keys, a.Name)
		}
		return keys, next != "", next, nil
	})
	if err != nil {
		return nil, fmt.Errorf("chunk %s: list %s: %w", d, s.objURL(prefix), err)
	}
	return names, nil
}

// ReadBadCopy downloads the copy name kept aside (see
// chunkstore.BadCopies) as ReadChunk downloads a chunk.
func (s *Store) ReadBadCopy(ctx context.Context, name string, buf []byte, limit int) ([]byte, error) {
	key, ok := s.keys.BadCopyKey(name)
	if !ok {
		return nil, chunkstore.NotBadName(name)
	}
	out, err := s.readObject(ctx, key, buf, limit)
	if err != nil {
		return nil, &chunkstore.LocatedError{Location: s.objURL(key), Err: mapErr(err)}
	}
	return out, nil
}

// BadCopyLocation returns the URL of the copy name kept aside.
func (s *Store) BadCopyLocation(name string) string {
	if key, ok := s.keys.BadCopyKey(name); ok {
		return s.objURL(key)
	}
	return s.objURL(s.keys.Chunk(crypto.Digest{})) + " (" + name + ")"
}
