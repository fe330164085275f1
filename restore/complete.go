package restore

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// FileCheck is what CheckFile found in an existing file: whether it holds
// a plan's image whole.
type FileCheck struct {
	Size     int64  // the file's size, bytes
	Chunks   uint64 // chunk positions read back and checked
	Differ   uint64 // chunk positions whose digest differs from the index
	NotZero  uint64 // zero-range pieces that do not read as zeros
	Mismatch error  // the read-back's error naming the differing ranges; nil when none differ
}

// Whole reports whether the file holds the image exactly: its size, every
// chunk position and every zero range.
func (c FileCheck) Whole(plan *Plan) bool {
	return c.Size == int64(plan.Size) && c.Differ == 0 && c.NotZero == 0
}

// CheckFile reads an existing regular file at path back against plan
// (ReadBackFile: every chunk position's digest, keyed with cc for an
// encrypted archive, plain for cc == nil, and zero ranges reading as
// zeros; jobs readers, O_DIRECT where possible) without changing it: it is
// opened read-only, not through a symbolic link, and held with a shared
// flock so that a restore writing to it meanwhile is not read half-way
// (ErrTargetBusy). A file of another size than the image is not read. The
// error is one of opening, locking or reading the file, or ctx's; content
// that differs is FileCheck's, not an error.
func CheckFile(ctx context.Context, path string, plan *Plan, cc *crypto.Config, jobs int) (FileCheck, error) {
	var c FileCheck
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return c, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return c, err
	}
	if !st.Mode().IsRegular() {
		return c, fmt.Errorf("%s: not a regular file", path)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return c, fmt.Errorf("%s: %w: %s", path, ErrTargetBusy, holderWords(f))
	case err != nil:
		return c, fmt.Errorf("%s: lock: %w", path, err)
	}
	c.Size = st.Size()
	if c.Size != int64(plan.Size) {
		return c, nil
	}
	var stats ReadBackStats
	err = ReadBackFile(ctx, f, path, plan, cc, jobs, &stats)
	c.Chunks, c.Differ, c.NotZero = stats.Chunks.Load(), stats.Differ.Load(), stats.NotZero.Load()
	if errors.Is(err, ErrReadBackMismatch) {
		c.Mismatch, err = err, nil
	}
	return c, err
}
