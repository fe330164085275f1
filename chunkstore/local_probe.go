package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteProber is implemented by stores that can tell cheaply, before any
// work, whether they can be written at all: a directory creates and
// removes a temporary file. A bucket has no such cheap probe (a PUT it
// accepts leaves an object; a refusal may be per key) and does not
// implement it.
type WriteProber interface {
	// ProbeWrite returns nil when the store took a write just now, or why
	// not: an error naming the place tried, Outside for its cause (EACCES,
	// EPERM, EROFS, ENOSPC, EIO).
	ProbeWrite(ctx context.Context) error
}

var _ WriteProber = (*Local)(nil)

// ProbeWrite creates an empty temporary file in the datastore's .chunks
// directory and removes it (see WriteProber).
func (l *Local) ProbeWrite(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := fmt.Sprintf(".pbsdirect-probe.tmp%d", rand.Uint32())
		fd, err := unix.Openat(int(l.chunks.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(l.chunks.Name(), name), mapErr(err))
		}
		unix.Close(fd)
		if err := unix.Unlinkat(int(l.chunks.Fd()), name, 0); err != nil {
			return fmt.Errorf("remove %s: %w", filepath.Join(l.chunks.Name(), name), mapErr(err))
		}
		return nil
	}
}
