package gcsstore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/storage"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

var _ chunkstore.ModTimer = (*Store)(nil)

// ChunkModTime returns the size and last update time of the chunk object
// for d from its metadata (see chunkstore.ModTimer); a missing object
// wraps chunkstore.ErrNotFound.
func (s *Store) ChunkModTime(ctx context.Context, d crypto.Digest) (int64, time.Time, error) {
	key := s.keys.Chunk(d)
	attrs, err := s.attrs(ctx, key)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: s.objURL(key), Err: err})
	}
	return attrs.Size, attrs.Updated, nil
}

// FileModTime returns the last update time of the content file rel's
// object from its metadata (see chunkstore.ModTimer).
func (s *Store) FileModTime(ctx context.Context, rel string) (time.Time, error) {
	key, err := s.keys.Content(rel)
	if err != nil {
		return time.Time{}, err
	}
	attrs, err := s.attrs(ctx, key)
	if err != nil {
		return time.Time{}, &chunkstore.LocatedError{Location: s.objURL(key), Err: err}
	}
	return attrs.Updated, nil
}

// ModTimeResolution is a millisecond: GCS says update times in RFC 3339
// with fractions of a second.
func (s *Store) ModTimeResolution() time.Duration { return time.Millisecond }

// TouchChunk does nothing: a bucket's chunks are not kept by their access
// time (see chunkstore.ModTimer).
func (s *Store) TouchChunk(ctx context.Context, d crypto.Digest) error { return nil }

// attrs returns the metadata of the object key, errors mapped.
func (s *Store) attrs(ctx context.Context, key string) (*storage.ObjectAttrs, error) {
	var attrs *storage.ObjectAttrs
	err := s.do(ctx, func(ctx context.Context) (err error) {
		attrs, err = s.bucket.Object(key).Attrs(ctx)
		return err
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return attrs, nil
}
