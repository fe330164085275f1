package filetarget

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// CheckWriteFile makes, without creating or changing anything, the checks
// WriteFile makes of path before it writes there, so that a caller with
// other targets to write first refuses the run before any of them is
// touched: the symlink policy (opts.FollowSymlinks;
// restore.ErrTargetSymlink), its directory there (restore.ErrTargetUnusable
// otherwise), not inside opts.StoreDir nor an existing hard link of one of
// its files (restore.ErrTargetInStore), and an existing path a regular
// file (restore.ErrTargetUnusable) that needs opts.Force
// (restore.ErrTargetExists) and is no disk image container
// (restore.ErrTargetFormat). Locks are not probed (CheckNotBusy does).
func CheckWriteFile(path string, opts Options) error {
	p, st, err := resolveTarget(path, opts.FollowSymlinks)
	if err != nil {
		return err
	}
	if st != nil {
		if !st.Mode().IsRegular() {
			return restore.Unusable(fmt.Errorf("%s: not a regular file: a blob is restored to a file", path))
		}
		if !opts.Force {
			return fmt.Errorf("%s: %w", path, restore.ErrTargetExists)
		}
	}
	pl, err := openPlace(path, p)
	if err != nil {
		return err
	}
	defer pl.close()
	if st == nil {
		return checkNotInStore(opts.StoreDir, pl.dir, nil, path)
	}
	fd, err := unix.Openat(int(pl.dir.Fd()), pl.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	old := os.NewFile(uintptr(fd), path)
	defer old.Close()
	if err := checkNotInStore(opts.StoreDir, pl.dir, old, path); err != nil {
		return err
	}
	return checkFormat(old, path, st.Size(), false)
}
