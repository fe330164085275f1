package chunkstore

import (
	"context"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Stamp is when a stored object was last written, as a WriterStamper
// tells it.
type Stamp struct {
	// Server is the store's time of the last write, in steps of its
	// ModTimeResolution (S3's Last-Modified: whole seconds).
	Server time.Time
	// Writer is the time, by the writer's clock to the nanosecond, that
	// pbsdirect recorded in the object when it wrote it; zero when the
	// object carries none (written, or overwritten since, by another tool)
	// or one that does not parse.
	Writer time.Time
}

// WriterStamper is implemented by ModTimers whose objects carry, besides
// the store's coarse time, the time pbsdirect's writer recorded in them
// as it wrote them (S3: user metadata), so that two objects written in the
// same server second can be put in order when the same writer wrote both.
type WriterStamper interface {
	ModTimer
	// ChunkStamp returns the size in bytes and the stamp of the stored
	// chunk for d, as ChunkModTime does (same errors).
	ChunkStamp(ctx context.Context, d crypto.Digest) (size int64, st Stamp, err error)
	// FileStamp returns the stamp of the content file rel, as FileModTime
	// does (same errors).
	FileStamp(ctx context.Context, rel string) (Stamp, error)
}
