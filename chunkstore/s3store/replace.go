package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
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

// headSize returns the size of the object key (HEAD), errors mapped. A
// HEAD's 404 has no body, so it cannot tell a missing object (NoSuchKey)
// from a missing bucket or a proxy's answer: it is confirmed by a GET of
// the object's first byte, and the object is missing (wraps
// chunkstore.ErrNotFound) only when that GET answers 404 NoSuchKey. Any
// other answer to it is mapped as such (NoSuchBucket, a code-less 404: not
// proven); an object that the GET finds after all has its size taken from
// that answer.
func (s *Store) headSize(ctx context.Context, key string) (int64, error) {
	var head *s3.HeadObjectOutput
	err := s.do(ctx, func(ctx context.Context) (err error) {
		head, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	})
	switch {
	case err == nil:
		return aws.ToInt64(head.ContentLength), nil
	case httpStatus(err) != http.StatusNotFound:
		return 0, mapErr(err)
	}
	var out *s3.GetObjectOutput
	err = s.do(ctx, func(ctx context.Context) (err error) {
		out, err = s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key, Range: aws.String("bytes=0-0")})
		return err
	})
	switch {
	case err == nil:
		out.Body.Close()
		return objectSize(out), nil
	case httpStatus(err) == http.StatusRequestedRangeNotSatisfiable:
		return 0, nil // there, and empty
	}
	return 0, mapErr(err)
}

// objectSize is the whole object's size from a GET's answer: the total of
// its Content-Range ("bytes 0-0/SIZE") for a ranged GET, else its
// Content-Length.
func objectSize(out *s3.GetObjectOutput) int64 {
	cr := aws.ToString(out.ContentRange)
	if i := strings.LastIndexByte(cr, '/'); i >= 0 {
		if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
			return n
		}
	}
	return aws.ToInt64(out.ContentLength)
}

// ReplaceChunk writes old under the first free "<digest>.N.bad" key of the
// chunk's prefix (a bucket has no rename; none is overwritten: all taken
// is chunkstore.ErrNoFreeBadName), then blob under the chunk's key (see
// chunkstore.ChunkReplacer and bucket.ReplaceChunk).
func (s *Store) ReplaceChunk(ctx context.Context, d crypto.Digest, old, blob []byte) (string, error) {
	return bucket.ReplaceChunk(ctx, objectWriter{s}, s.keys.Chunk(d), d, old, blob)
}

// objectWriter is the store as a bucket.ObjectWriter.
type objectWriter struct{ s *Store }

func (w objectWriter) ObjectURL(key string) string { return w.s.objURL(key) }

// PutNew looks for an object under key (HEAD, see headSize) and puts data
// there only when it is missing.
func (w objectWriter) PutNew(ctx context.Context, key string, data []byte) (bool, error) {
	_, err := w.s.headSize(ctx, key)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, chunkstore.ErrNotFound) {
		return false, fmt.Errorf("%s: %w", w.s.objURL(key), err)
	}
	return true, w.s.put(ctx, key, data)
}

func (w objectWriter) Put(ctx context.Context, key string, data []byte) error {
	return w.s.put(ctx, key, data)
}
