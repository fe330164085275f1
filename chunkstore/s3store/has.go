package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

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
	head, err := s.headObject(ctx, s.keys.Chunk(d))
	switch {
	case err == nil:
		return aws.ToInt64(head.ContentLength) > 0, nil
	case errors.Is(err, chunkstore.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("chunk %s: %w", d, err)
}

var _ chunkstore.ModTimer = (*Store)(nil)

// ChunkModTime returns the size and Last-Modified time of the chunk
// object for d, from one HEAD request (see chunkstore.ModTimer); S3 says
// the time in whole seconds. A 404 wraps chunkstore.ErrNotFound,
// unconfirmed (see HasChunk).
func (s *Store) ChunkModTime(ctx context.Context, d crypto.Digest) (int64, time.Time, error) {
	head, err := s.headObject(ctx, s.keys.Chunk(d))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("chunk %s: %w", d, err)
	}
	return aws.ToInt64(head.ContentLength), aws.ToTime(head.LastModified), nil
}

// FileModTime returns the Last-Modified time of the content file rel's
// object, from one HEAD request (see chunkstore.ModTimer).
func (s *Store) FileModTime(ctx context.Context, rel string) (time.Time, error) {
	key, err := s.keys.Content(rel)
	if err != nil {
		return time.Time{}, err
	}
	head, err := s.headObject(ctx, key)
	if err != nil {
		return time.Time{}, err
	}
	return aws.ToTime(head.LastModified), nil
}

// ModTimeResolution is a second: S3 says Last-Modified in whole seconds.
func (s *Store) ModTimeResolution() time.Duration { return time.Second }

// TouchChunk does nothing: a bucket's chunks are not kept by their access
// time (see chunkstore.ModTimer).
func (s *Store) TouchChunk(ctx context.Context, d crypto.Digest) error { return nil }

// headObject HEADs key; a 404 wraps chunkstore.ErrNotFound unconfirmed,
// other errors are mapped. Errors name the object.
func (s *Store) headObject(ctx context.Context, key string) (*s3.HeadObjectOutput, error) {
	var head *s3.HeadObjectOutput
	err := s.do(ctx, func(ctx context.Context) (err error) {
		head, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	})
	switch {
	case err == nil:
		return head, nil
	case httpStatus(err) == http.StatusNotFound:
		err = fmt.Errorf("%w: HEAD answered 404", chunkstore.ErrNotFound)
	default:
		err = mapErr(err)
	}
	return nil, &chunkstore.LocatedError{Location: s.objURL(key), Err: err}
}
