package filetarget

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"

	"github.com/pbsdirect/pbsdirect/restore"
)

// CheckFile reads an existing regular file at path back against plan
// (ReadBackFile: every chunk position's digest, keyed with cc for an
// encrypted archive, plain for cc == nil, and zero ranges reading as
// zeros; jobs readers, O_DIRECT where possible) without changing it: it is
// opened read-only, not through a symbolic link, and held with a shared
// flock so that a restore writing to it meanwhile is not read half-way
// (restore.ErrTargetBusy). A file of another size than the image is not read. The
// error is one of opening, locking or reading the file, or ctx's; content
// that differs is restore.FileCheck's, not an error.
func CheckFile(ctx context.Context, path string, plan *restore.Plan, cc *crypto.Config, jobs int) (restore.FileCheck, error) {
	var c restore.FileCheck
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
		return c, fmt.Errorf("%s: %w: %s", path, restore.ErrTargetBusy, holderWords(f))
	case err != nil:
		return c, fmt.Errorf("%s: lock: %w", path, err)
	}
	c.Size = st.Size()
	if c.Size != int64(plan.Size) {
		return c, nil
	}
	var stats restore.ReadBackStats
	err = ReadBackFile(ctx, f, path, plan, cc, jobs, &stats)
	c.Chunks, c.Differ, c.NotZero = stats.Chunks.Load(), stats.Differ.Load(), stats.NotZero.Load()
	if errors.Is(err, restore.ErrReadBackMismatch) {
		c.Mismatch, err = err, nil
	}
	return c, err
}
