package filetarget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"

	"github.com/pbsdirect/pbsdirect/restore"
)

// CheckFile reads an existing regular file or block device at path back
// against plan (ReadBackFile: every chunk position's digest, keyed with cc
// for an encrypted archive, plain for cc == nil, and zero ranges reading
// as zeros; jobs readers, O_DIRECT where possible) without changing it: it
// is opened read-only, not through a symbolic link (except one to a block
// device, as Open), and held with a shared flock so that a restore writing
// to it meanwhile is not read half-way (restore.ErrTargetBusy). A file of
// another size than the image, or a device smaller than it, is not read;
// a larger device has its first image-size bytes read, and its
// FileCheck.Size is then the image's. The error is one of opening,
// locking or reading the file, or ctx's; content that differs is
// restore.FileCheck's, not an error.
func CheckFile(ctx context.Context, path string, plan *restore.Plan, cc *crypto.Config, jobs int) (restore.FileCheck, error) {
	var c restore.FileCheck
	open := path
	if IsDevice(path) {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return c, err
		}
		open = resolved
	}
	f, err := os.OpenFile(open, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return c, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return c, err
	}
	device := st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0
	if !st.Mode().IsRegular() && !device {
		return c, fmt.Errorf("%s: not a regular file or block device", path)
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
	if device {
		n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
		if err != nil {
			return c, fmt.Errorf("%s: block device size: %w", path, err)
		}
		c.Size = min(int64(n), int64(plan.Size))
	}
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
