package s3store

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

var _ chunkstore.ChunkChecker = (*Store)(nil)

// HasChunk reports whether a non-empty chunk object for d exists, from one
// HEAD request (see chunkstore.ChunkChecker): a 404 is taken as missing
// without the GET that StatChunk confirms it with.
func (s *Store) HasChunk(ctx context.Context, d crypto.Digest) (bool, error) {
	key := s.keys.Chunk(d)
	var head *s3.HeadObjectOutput
	err := s.do(ctx, func(ctx context.Context) (err error) {
		head, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	})
	switch {
	case err == nil:
		return aws.ToInt64(head.ContentLength) > 0, nil
	case httpStatus(err) == http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: s.objURL(key), Err: mapErr(err)})
}
