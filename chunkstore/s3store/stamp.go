package s3store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// writtenMeta is the user metadata key under which every object pbsdirect
// PUTs carries the writer's time of that PUT (header
// "x-amz-meta-pbsdirect-written"), in decimal Unix nanoseconds
// (writerTime): S3 stamps Last-Modified in whole seconds, too coarse to
// tell a backup's last chunks from its manifest (chunkstore.Stamp).
const writtenMeta = "pbsdirect-written"

// writtenMetaMax is the longest writtenMeta value parsed: an int64 of
// nanoseconds has at most 19 digits.
const writtenMetaMax = 19

// writerMeta returns the user metadata an object put now carries.
func writerMeta() map[string]string {
	return map[string]string{writtenMeta: strconv.FormatInt(time.Now().UnixNano(), 10)}
}

// writerTime returns the writer's time in the user metadata meta (as HEAD
// returns it, keys in any case), or the zero time when it is absent, more
// than writtenMetaMax bytes, not all decimal digits, or not after the
// epoch: the store's text is not trusted beyond a bounded parse.
func writerTime(meta map[string]string) time.Time {
	for k, v := range meta {
		if !strings.EqualFold(k, writtenMeta) {
			continue
		}
		if len(v) == 0 || len(v) > writtenMetaMax || strings.Trim(v, "0123456789") != "" {
			return time.Time{}
		}
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ns <= 0 {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	return time.Time{}
}

var _ chunkstore.WriterStamper = (*Store)(nil)

// ChunkStamp returns the size, the Last-Modified second and the writer's
// time (writtenMeta) of the chunk object for d, from one HEAD request (see
// chunkstore.WriterStamper); errors as ChunkModTime's.
func (s *Store) ChunkStamp(ctx context.Context, d crypto.Digest) (int64, chunkstore.Stamp, error) {
	head, err := s.headObject(ctx, s.keys.Chunk(d))
	if err != nil {
		return 0, chunkstore.Stamp{}, fmt.Errorf("chunk %s: %w", d, err)
	}
	return aws.ToInt64(head.ContentLength), headStamp(head), nil
}

// FileStamp returns the Last-Modified second and the writer's time
// (writtenMeta) of the content file rel's object, from one HEAD request
// (see chunkstore.WriterStamper); errors as FileModTime's.
func (s *Store) FileStamp(ctx context.Context, rel string) (chunkstore.Stamp, error) {
	key, err := s.keys.Content(rel)
	if err != nil {
		return chunkstore.Stamp{}, err
	}
	head, err := s.headObject(ctx, key)
	if err != nil {
		return chunkstore.Stamp{}, err
	}
	return headStamp(head), nil
}

func headStamp(head *s3.HeadObjectOutput) chunkstore.Stamp {
	return chunkstore.Stamp{Server: aws.ToTime(head.LastModified), Writer: writerTime(head.Metadata)}
}
