package s3store

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// StatChunk returns the size of the chunk object for d from a HEAD request
// (see chunkstore.ChunkStatter); a missing object wraps
// chunkstore.ErrNotFound.
func (s *Store) StatChunk(ctx context.Context, d crypto.Digest) (int64, error) {
	key := s.keys.Chunk(d)
	size, err := s.headSize(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: s.objURL(key), Err: err})
	}
	return size, nil
}

// headSize returns the size of the object key (HEAD), errors mapped.
func (s *Store) headSize(ctx context.Context, key string) (int64, error) {
	var head *s3.HeadObjectOutput
	err := s.do(ctx, func(ctx context.Context) (err error) {
		head, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	})
	if err != nil {
		return 0, mapErr(err)
	}
	return aws.ToInt64(head.ContentLength), nil
}

// ReplaceChunk writes old under the first free "<digest>.N.bad" key of the
// chunk's prefix (a bucket has no rename; .9.bad is overwritten when all
// are taken), then blob under the chunk's key (see
// chunkstore.ChunkReplacer).
func (s *Store) ReplaceChunk(ctx context.Context, d crypto.Digest, old, blob []byte) (string, error) {
	key := s.keys.Chunk(d)
	aside := ""
	if len(old) > 0 {
		for n := range chunkstore.MaxBadGenerations {
			bad := path.Join(path.Dir(key), chunkstore.BadName(d, n))
			if n < chunkstore.MaxBadGenerations-1 {
				_, err := s.headSize(ctx, bad)
				if err == nil {
					continue
				}
				if !errors.Is(err, chunkstore.ErrNotFound) {
					return "", fmt.Errorf("chunk %s: %s: %w", d, s.objURL(bad), err)
				}
			}
			if err := s.put(ctx, bad, old); err != nil {
				return "", fmt.Errorf("chunk %s: keep the damaged copy: %w", d, err)
			}
			aside = s.objURL(bad)
			break
		}
	}
	if err := s.put(ctx, key, blob); err != nil {
		return aside, fmt.Errorf("chunk %s: %w", d, err)
	}
	return aside, nil
}
