package bootcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dirPrefix starts the names of the private directories of boot checks
// in the temporary directory.
const dirPrefix = "pbsdirect-boot-"

// lockName is the file in a private directory that its run holds an
// exclusive flock on while it lives; the kernel drops the lock when the
// process dies, however it dies (kill -9 included).
const lockName = "owner.lock"

// MakeDir makes a private directory (0700) for a boot check in parent
// (os.TempDir() when empty), named pbsdirect-boot-*, and holds a lock in
// it for the run. It first removes the directories of earlier runs that
// died without cleaning up (their lock free again: the owner is gone); a
// directory without a lock file, or one another live run holds, is left
// alone. done removes the directory and releases the lock. Errors are the
// file system's.
func MakeDir(parent string) (dir string, done func(), err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	RemoveStale(parent)
	if dir, err = os.MkdirTemp(parent, dirPrefix); err != nil {
		return "", nil, err
	}
	// Locked under another name, then renamed: a lock file others see is
	// always held.
	tmp := filepath.Join(dir, lockName+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			err = os.Rename(tmp, filepath.Join(dir, lockName))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("boot check: private directory %s: %w", dir, err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid()) // for a person looking; the lock decides
	return dir, func() {
		os.RemoveAll(dir) // the lock file first gone, then the lock
		f.Close()
	}, nil
}

// RemoveStale removes the private directories in parent of boot checks
// whose process died (see MakeDir) and returns how many it removed.
func RemoveStale(parent string) int {
	dirs, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	n := 0
	for _, d := range dirs {
		if st, err := os.Lstat(d); err != nil || !st.IsDir() {
			continue
		}
		f, err := os.OpenFile(filepath.Join(d, lockName), os.O_RDWR, 0)
		if err != nil {
			continue // no lock: not ours to judge
		}
		// Held (EWOULDBLOCK): a live run's. Another error: cannot tell,
		// left alone.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.RemoveAll(d) == nil {
			n++
		}
		f.Close()
	}
	return n
}
