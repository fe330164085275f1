package s3store

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

var _ chunkstore.BadCopies = (*Store)(nil)

// ListBadCopies returns the names of the copies of d kept aside (see
// chunkstore.BadCopies), paging with ListObjectsV2 through the keys that
// start with the chunk's key and a dot (bucket.Keys.ListBadCopies: at most
// bucket.MaxBadCopyPages requests, each under the bucket policy; a longer
// listing fails with bucket.ErrBadCopySearchCut, exit code 3).
func (s *Store) ListBadCopies(ctx context.Context, d crypto.Digest) ([]string, error) {
	prefix := s.keys.BadCopyPrefix(d)
	names, err := s.keys.ListBadCopies(ctx, d, "S3 ListObjectsV2", s.objURL(prefix), func(ctx context.Context, token, after string, useAfter bool) ([]string, bool, string, error) {
		in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(prefix)}
		if s.pageSize > 0 {
			in.MaxKeys = aws.Int32(s.pageSize)
		}
		if token != "" {
			in.ContinuationToken = aws.String(token)
		}
		if useAfter {
			in.StartAfter = aws.String(after)
		}
		var page *s3.ListObjectsV2Output
		err := s.do(ctx, func(ctx context.Context) (err error) {
			page, err = s.client.ListObjectsV2(ctx, in, withEncodingProbe)
			return err
		})
		if err != nil {
			return nil, false, "", mapErr(err)
		}
		encoded := keysURLEncoded(page)
		keys := make([]string, 0, len(page.Contents))
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if encoded {
				if key, err = url.QueryUnescape(key); err != nil {
					continue // not a copy's name, which has nothing to encode
				}
			}
			keys = append(keys, key)
		}
		return keys, aws.ToBool(page.IsTruncated), aws.ToString(page.NextContinuationToken), nil
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
