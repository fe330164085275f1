package filetarget

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// JournalDirs returns the directories, in order, where the journal of a
// restore to a block device may live: $XDG_CACHE_HOME/pbsdirect (when set
// to an absolute path), $HOME/.cache/pbsdirect (when HOME is set),
// /var/cache/pbsdirect, /var/tmp/pbsdirect-UID and /tmp/pbsdirect-UID.
func JournalDirs() []string {
	var dirs []string
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Join(x, "pbsdirect"))
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		dirs = append(dirs, filepath.Join(h, ".cache", "pbsdirect"))
	}
	uid := fmt.Sprint(os.Geteuid())
	return append(dirs, "/var/cache/pbsdirect", "/var/tmp/pbsdirect-"+uid, "/tmp/pbsdirect-"+uid)
}

// JournalPath returns where the journal of a restore to target lives: for
// a file beside it (".NAME.pbsdirect-journal"); for a block device (the
// path, or a link to one) "journal-<sha256 of the device's path>" in the
// first of JournalDirs that holds one already, else in the first that is
// (or can be made) a writable directory of this user; a directory that
// is a link, another user's, or writable by group or others is passed
// over. When none is, the
// error wraps restore.ErrNoJournalPlace.
func JournalPath(target string) (string, error) {
	if IsDevice(target) {
		resolved, err := filepath.EvalSymlinks(target)
		if err != nil {
			return "", err
		}
		return cachePath(target, "journal-", resolved)
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	// Short enough for the ".new" name it is rewritten under, too.
	name := strings.TrimSuffix(sideName(filepath.Base(abs), ".pbsdirect-journal.new"), ".new")
	return filepath.Join(filepath.Dir(abs), name), nil
}

// cachePath returns where the file named prefix + a hash of key lives for
// target (a journal, a record) among JournalDirs: in the first that holds
// one already, else in the first that is (or can be made) a writable
// directory of this user; none: an error wrapping restore.ErrNoJournalPlace.
func cachePath(target, prefix, key string) (string, error) {
	sum := sha256.Sum256([]byte(key))
	name := prefix + hex.EncodeToString(sum[:16])
	dirs := JournalDirs()
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, name)); err == nil && ownDir(d) {
			return filepath.Join(d, name), nil
		}
	}
	for _, d := range dirs {
		if os.MkdirAll(d, 0o700) == nil && ownDir(d) && unix.Access(d, unix.W_OK) == nil {
			return filepath.Join(d, name), nil
		}
	}
	return "", fmt.Errorf("journal for %s: %w (tried %s)", target, restore.ErrNoJournalPlace, strings.Join(dirs, ", "))
}

// ownDir reports whether d is a directory (not a link) owned by this user
// and writable by no one else (group or others): a journal is never kept
// where another user could have put it, or a link in its place.
func ownDir(d string) bool {
	var st unix.Stat_t
	return unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Geteuid() && st.Mode&0o022 == 0
}

// TargetIdentity returns the restore.Completion identity of the open target f
// (Finished left zero): for a regular file its device, inode, size,
// modification and change times; for a block device its device number
// and size.
func TargetIdentity(f *os.File) (restore.Completion, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return restore.Completion{}, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		size, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
		if err != nil {
			return restore.Completion{}, err
		}
		return restore.Completion{Rdev: uint64(st.Rdev), Size: int64(size)}, nil
	}
	return restore.Completion{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}, nil
}

// IsDevice reports whether path is (or links to) a block device: its
// journal lives under JournalDirs, and it holds what was written to it
// without a partial output.
func IsDevice(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0
}
