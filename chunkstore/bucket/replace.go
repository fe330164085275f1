package bucket

import (
	"context"
	"fmt"
	"path"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// ObjectWriter is what ReplaceChunk needs of a bucket backend: its two
// ways of writing an object and its objects' URLs. Errors returned are
// mapped to the chunkstore errors and name the object's URL.
type ObjectWriter interface {
	// ObjectURL returns the URL of the object key ("s3://bucket/key").
	ObjectURL(key string) string
	// PutNew writes data under key unless an object is there already; it
	// reports false and no error when one is.
	PutNew(ctx context.Context, key string, data []byte) (bool, error)
	// Put writes data under key, replacing any object there.
	Put(ctx context.Context, key string, data []byte) error
}

// ReplaceChunk replaces the chunk d stored under key (see
// chunkstore.ChunkReplacer): a bucket has no rename, so old (when not
// empty) is written under the first free "<digest>.N.bad" key beside key
// (never over an existing one: when all are taken it returns an error
// wrapping chunkstore.ErrNoFreeBadName and writes nothing), then blob
// under key. It returns the damaged copy's URL ("" when old is empty),
// also when writing blob fails.
func ReplaceChunk(ctx context.Context, w ObjectWriter, key string, d crypto.Digest, old, blob []byte) (string, error) {
	aside := ""
	if len(old) > 0 {
		for n := range chunkstore.MaxBadGenerations {
			bad := path.Join(path.Dir(key), chunkstore.BadName(d, n))
			written, err := w.PutNew(ctx, bad, old)
			if err != nil {
				return "", fmt.Errorf("chunk %s: keep the damaged copy: %w", d, err)
			}
			if written {
				aside = w.ObjectURL(bad)
				break
			}
		}
		if aside == "" {
			return "", fmt.Errorf("chunk %s: %s: %w", d, w.ObjectURL(key), chunkstore.ErrNoFreeBadName)
		}
	}
	if err := w.Put(ctx, key, blob); err != nil {
		return aside, fmt.Errorf("chunk %s: %w", d, err)
	}
	return aside, nil
}
