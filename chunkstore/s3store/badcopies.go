package s3store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/crypto"
)

var _ chunkstore.BadCopies = (*Store)(nil)

// ListBadCopies returns the names of the copies of d kept aside (see
// chunkstore.BadCopies) from one ListObjectsV2 request for the keys that
// start with the chunk's key and a dot (at most bucket.MaxBadCopyKeys of
// them), under the bucket policy.
func (s *Store) ListBadCopies(ctx context.Context, d crypto.Digest) ([]string, error) {
	prefix := s.keys.BadCopyPrefix(d)
	var page *s3.ListObjectsV2Output
	err := s.do(ctx, func(ctx context.Context) (err error) {
		page, err = s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket:  &s.bucket,
			Prefix:  aws.String(prefix),
			MaxKeys: aws.Int32(bucket.MaxBadCopyKeys),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("chunk %s: list %s: %w", d, s.objURL(prefix), mapErr(err))
	}
	keys := make([]string, 0, len(page.Contents))
	for _, o := range page.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return s.keys.BadCopyNames(d, keys), nil
}

// ReadBadCopy downloads the copy name kept aside (see
// chunkstore.BadCopies) as ReadChunk downloads a chunk.
func (s *Store) ReadBadCopy(ctx context.Context, name string, buf []byte, limit int) ([]byte, error) {
	key, ok := s.keys.BadCopyKey(name)
	if !ok {
		return nil, chunkstore.NotBadName(name)
	}
	var out []byte
	err := s.pol.Do(ctx, true, func(ctx context.Context) error {
		var err error
		out, err = s.readChunkOnce(ctx, key, buf, chunkstore.ReadLimit(limit))
		return err
	}, classifyErr)
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
