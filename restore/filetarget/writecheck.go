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
// (restore.ErrTargetFormat), and its directory one a file can be created
// in (checkDirWritable). Locks are not probed (CheckNotBusy does).
func CheckWriteFile(path string, opts Options) error {
	pl, st, err := openWriteFilePlace(path, opts)
	if err != nil {
		return err
	}
	defer pl.close()
	if err := checkDirWritable(pl); err != nil {
		return err
	}
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

// openWriteFilePlace resolves path as WriteFile and CheckWriteFile do
// (opts.FollowSymlinks) and opens its place; st is the existing file's
// information, nil when there is none. An existing path that is not a
// regular file is refused (restore.ErrTargetUnusable), an existing file
// without opts.Force too (restore.ErrTargetExists). Close the place when
// done.
func openWriteFilePlace(path string, opts Options) (*place, os.FileInfo, error) {
	p, st, err := resolveTarget(path, opts.FollowSymlinks)
	if err != nil {
		return nil, nil, err
	}
	if st != nil {
		if !st.Mode().IsRegular() {
			return nil, nil, restore.Unusable(fmt.Errorf("%s: not a regular file: a blob is restored to a file", path))
		}
		if !opts.Force {
			return nil, nil, fmt.Errorf("%s: %w", path, restore.ErrTargetExists)
		}
	}
	pl, err := openPlace(path, p)
	if err != nil {
		return nil, nil, err
	}
	return pl, st, nil
}

// checkDirWritable reports, without creating anything, whether a file can
// be created in the place's directory: not on a read-only mount (statfs
// ST_RDONLY, a read-only bind mount too) and writable by this process
// (access W_OK, which also answers EROFS). The error names the path and
// the directory, as the creation's own would.
func checkDirWritable(pl *place) error {
	fd := int(pl.dir.Fd())
	var fs unix.Statfs_t
	err := unix.Fstatfs(fd, &fs)
	if err == nil && fs.Flags&unix.ST_RDONLY != 0 {
		err = unix.EROFS
	} else if err == nil {
		err = unix.Faccessat(fd, ".", unix.W_OK, 0)
	}
	if err != nil {
		return fmt.Errorf("%s: cannot create a file in %s: %w", pl.path, pl.dirName(), err)
	}
	return nil
}
