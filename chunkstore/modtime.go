package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// ModTimer is implemented by stores that can tell, from a stat and without
// reading, when a chunk or a content file was last written: a directory,
// where that is the file's modification time (garbage collection's touch,
// PBS's and pbsdirect's, sets only the access time; a chunk file replaced
// or rewritten in place gets a new one). A backup uses it to vouch for the
// chunks a finished snapshot lists without reading them: a chunk written
// no later than that snapshot's manifest has not been rewritten since.
type ModTimer interface {
	// ChunkModTime returns the size in bytes and the modification time of
	// the stored chunk for d. A missing chunk returns an error wrapping
	// ErrNotFound; a chunk file that is a symbolic link is refused
	// (ErrSymlink).
	ChunkModTime(ctx context.Context, d crypto.Digest) (size int64, mtime time.Time, err error)
	// FileModTime returns the modification time of the content file rel
	// (datastore-relative). A missing file returns an error wrapping
	// ErrNotFound.
	FileModTime(ctx context.Context, rel string) (time.Time, error)
	// ModTimeResolution is the coarsest step of the times it returns: a
	// file written within one step after another may carry the same time.
	ModTimeResolution() time.Duration
	// TouchChunk marks the chunk for d as used now for garbage collection,
	// as WriteChunk marks a chunk that exists; a missing chunk returns an
	// error wrapping ErrNotFound.
	TouchChunk(ctx context.Context, d crypto.Digest) error
}

var _ ModTimer = (*Local)(nil)

// ChunkModTime returns the size and modification time of the chunk file
// for d (see ModTimer).
func (l *Local) ChunkModTime(ctx context.Context, d crypto.Digest) (int64, time.Time, error) {
	h := d.String()
	f, err := openRegular(l.chunks, l.chunks.Name(), h[:4]+"/"+h)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("chunk %s: %w", d, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("chunk %s: %v", d, err)
	}
	return st.Size(), st.ModTime(), nil
}

// FileModTime returns the modification time of the content file rel (see
// ModTimer).
func (l *Local) FileModTime(ctx context.Context, rel string) (time.Time, error) {
	c, err := clean(rel)
	if err != nil {
		return time.Time{}, err
	}
	f, err := openRegular(l.dir, l.root, c)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// ModTimeResolution is 10 ms: file times are set from the kernel's coarse
// clock, which steps once per timer tick (1 to 10 ms).
func (l *Local) ModTimeResolution() time.Duration { return 10 * time.Millisecond }

// TouchChunk sets the access time of the chunk file for d to now, leaving
// its modification time, as WriteChunk does for a chunk that exists: the
// mark garbage collection keeps a chunk by (§9). A chunk that is not there
// wraps ErrNotFound.
func (l *Local) TouchChunk(ctx context.Context, d crypto.Digest) error {
	h := d.String()
	dir, err := openBeneath(l.chunks, l.chunks.Name(), h[:4], unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", d, err)
	}
	defer dir.Close()
	now := unix.NsecToTimespec(time.Now().UnixNano())
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	if err := unix.UtimesNanoAt(int(dir.Fd()), h, []unix.Timespec{now, omit}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		return fmt.Errorf("chunk %s: touch %s: %w", d, l.ChunkLocation(d), err)
	}
	return nil
}
