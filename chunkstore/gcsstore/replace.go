package gcsstore

import (
	"context"
	"fmt"
	"net/http"
	"path"

	"cloud.google.com/go/storage"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// StatChunk returns the size of the chunk object for d from its metadata
// (see chunkstore.ChunkStatter); a missing object wraps
// chunkstore.ErrNotFound.
func (s *Store) StatChunk(ctx context.Context, d crypto.Digest) (int64, error) {
	key := s.keys.Chunk(d)
	size, err := s.objSize(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: s.objURL(key), Err: err})
	}
	return size, nil
}

// objSize returns the size of the object key from its metadata, errors
// mapped.
func (s *Store) objSize(ctx context.Context, key string) (int64, error) {
	var attrs *storage.ObjectAttrs
	err := s.do(ctx, func(ctx context.Context) (err error) {
		attrs, err = s.bucket.Object(key).Attrs(ctx)
		return err
	})
	if err != nil {
		return 0, mapErr(err)
	}
	return attrs.Size, nil
}

// ReplaceChunk writes old under the first free "<digest>.N.bad" key of the
// chunk's prefix (no rename in a bucket; .9.bad is overwritten when all are
// taken), then blob under the chunk's key (see chunkstore.ChunkReplacer).
func (s *Store) ReplaceChunk(ctx context.Context, d crypto.Digest, old, blob []byte) (string, error) {
	key := s.keys.Chunk(d)
	aside := ""
	if len(old) > 0 {
		for n := range chunkstore.MaxBadGenerations {
			bad := path.Join(path.Dir(key), chunkstore.BadName(d, n))
			obj := s.bucket.Object(bad)
			if n < chunkstore.MaxBadGenerations-1 {
				obj = obj.If(storage.Conditions{DoesNotExist: true})
			}
			err := s.upload(ctx, obj, old)
			if err == nil {
				aside = s.objURL(bad)
				break
			}
			if status(err) != http.StatusPreconditionFailed {
				return "", fmt.Errorf("chunk %s: keep the damaged copy: %s: %w", d, s.objURL(bad), mapErr(err))
			}
		}
	}
	if err := s.upload(ctx, s.bucket.Object(key), blob); err != nil {
		return aside, fmt.Errorf("chunk %s: %s: %w", d, s.objURL(key), mapErr(err))
	}
	return aside, nil
}
