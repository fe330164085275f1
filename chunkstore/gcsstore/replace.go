package gcsstore

import (
	"context"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
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
// chunk's prefix (no rename in a bucket; none is overwritten: all taken is
// chunkstore.ErrNoFreeBadName), then blob under the chunk's key (see
// chunkstore.ChunkReplacer and bucket.ReplaceChunk).
func (s *Store) ReplaceChunk(ctx context.Context, d crypto.Digest, old, blob []byte) (string, error) {
	return bucket.ReplaceChunk(ctx, objectWriter{s}, s.keys.Chunk(d), d, old, blob)
}

// objectWriter is the store as a bucket.ObjectWriter.
type objectWriter struct{ s *Store }

func (w objectWriter) ObjectURL(key string) string { return w.s.objURL(key) }

// PutNew uploads data under key on the condition that no object is there;
// a failed precondition reports false.
func (w objectWriter) PutNew(ctx context.Context, key string, data []byte) (bool, error) {
	err := w.s.upload(ctx, w.s.bucket.Object(key).If(storage.Conditions{DoesNotExist: true}), data)
	if status(err) == http.StatusPreconditionFailed {
		return false, nil
	}
	return err == nil, w.located(key, err)
}

func (w objectWriter) Put(ctx context.Context, key string, data []byte) error {
	return w.located(key, w.s.upload(ctx, w.s.bucket.Object(key), data))
}

// located maps err and names the object key in it; nil stays nil.
func (w objectWriter) located(key string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", w.s.objURL(key), mapErr(err))
}
