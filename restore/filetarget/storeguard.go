package filetarget

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"

	"github.com/pbsdirect/pbsdirect/restore"
)

// checkNotInStore refuses a target whose directory (dir, an open
// descriptor) is the store directory storeDir or lies below it — compared
// by device and inode up to the root, so links and bind mounts of the
// directory do not hide it — and an existing file f (nil for none) with
// more than one link on the store's device that starts with a PBS index or
// blob magic (a hard link of a store file placed outside it). storeDir ""
// checks nothing.
func checkNotInStore(storeDir string, dir *os.File, f *os.File, user string) error {
	if storeDir == "" {
		return nil
	}
	var store unix.Stat_t
	if err := unix.Stat(storeDir, &store); err != nil {
		return nil // the store itself reports that
	}
	fd, err := unix.Dup(int(dir.Fd()))
	if err != nil {
		return fmt.Errorf("%s: %w", user, err)
	}
	for range 4096 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			break
		}
		if st.Dev == store.Dev && st.Ino == store.Ino {
			unix.Close(fd)
			return fmt.Errorf("%s: %w: it is inside the datastore %s being restored from; restore somewhere else", user, restore.ErrTargetInStore, storeDir)
		}
		up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil
		}
		fd = up
		var parent unix.Stat_t
		if unix.Fstat(fd, &parent) != nil || (parent.Dev == st.Dev && parent.Ino == st.Ino) {
			break // the root
		}
	}
	unix.Close(fd)
	if f == nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Nlink < 2 || st.Dev != store.Dev {
		return nil
	}
	var head [8]byte
	if n, _ := f.ReadAt(head[:], 0); n < len(head) {
		return nil
	}
	switch head {
	case index.MagicFixed, index.MagicDynamic, chunkstore.MagicUncompressed, chunkstore.MagicCompressed,
		chunkstore.MagicEncrypted, chunkstore.MagicEncryptedCompressed:
		return fmt.Errorf("%s: %w: it is a PBS index or blob with %d hard links on the datastore's file system, likely a file of %s; restore somewhere else",
			user, restore.ErrTargetInStore, st.Nlink, storeDir)
	}
	return nil
}

// CheckDirNotInStore refuses (restore.ErrTargetInStore) a directory to
// extract into that is the store directory storeDir or lies below it,
// compared by device and inode as the file targets' check is; a directory
// not made yet is judged by its parent. storeDir "" (a bucket) checks
// nothing; a directory that cannot be opened is left to the extraction
// to report.
func CheckDirNotInStore(storeDir, dir string) error {
	if storeDir == "" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		if d, err = os.Open(filepath.Dir(dir)); err != nil {
			return nil
		}
	}
	defer d.Close()
	return checkNotInStore(storeDir, d, nil, dir)
}
