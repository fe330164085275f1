package filetarget

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// partialSuffix ends the name of the partial output beside a target: a new
// file (image or blob) is written as ".NAME.pbsdirect-partial" in the
// target's directory and renamed to NAME once complete. The name is fixed
// per target, so it is also the lock that keeps two runs from writing one
// target: each holds flock(LOCK_EX) on it for the whole run.
const partialSuffix = ".pbsdirect-partial"

// place is where a file target lives, worked through descriptors: the
// target's directory is opened once, and every later step (creating and
// locking the partial output, the final rename, cleanup, the directory
// sync) is relative to that descriptor, so renaming or replacing the
// directory mid-restore cannot redirect a write or leave the partial output
// behind elsewhere. Messages name the user's path, never the partial name.
type place struct {
	path    string   // the user's TARGET, for messages
	dir     *os.File // the directory holding the file (O_DIRECTORY)
	name    string   // the file's name in dir
	partial string   // the partial output's name in dir
}

// resolveTarget applies the symlink policy to the user's path and returns
// the path to work on and its Lstat (nil when nothing is there). A symbolic
// link at path is refused (restore.ErrTargetSymlink) unless follow is set, except
// one that leads to a block device: device names (/dev/VG/LV,
// /dev/disk/by-id/…) are links by design. A dangling link is refused either
// way, as is a missing directory.
func resolveTarget(path string, follow bool) (string, os.FileInfo, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		dir := filepath.Dir(path)
		dst, derr := os.Stat(dir)
		if derr != nil {
			err := fmt.Errorf("%s: target directory %s: %w", path, dir, causeOf(derr))
			if errors.Is(derr, unix.ENOENT) || errors.Is(derr, unix.ENOTDIR) {
				err = restore.Unusable(err)
			}
			return "", nil, err
		}
		if !dst.IsDir() {
			return "", nil, restore.Unusable(fmt.Errorf("%s: %s is not a directory", path, dir))
		}
		return path, nil, nil
	case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENAMETOOLONG):
		return "", nil, restore.Unusable(fmt.Errorf("%s: %w", path, causeOf(err)))
	case err != nil:
		return "", nil, fmt.Errorf("%s: %w", path, causeOf(err))
	case st.Mode()&os.ModeSymlink == 0:
		return path, st, nil
	}
	dest, _ := os.Readlink(path)
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w to %s, which does not resolve (dangling link): %w", path, restore.ErrTargetSymlink, dest, causeOf(err))
	}
	rst, err := os.Stat(resolved)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w to %s: %w", path, restore.ErrTargetSymlink, resolved, causeOf(err))
	}
	isDev := rst.Mode()&os.ModeDevice != 0 && rst.Mode()&os.ModeCharDevice == 0
	if !follow && !isDev {
		return "", nil, fmt.Errorf("%s: %w to %s: refusing to write through it (name the file itself, or give --follow-symlinks)", path, restore.ErrTargetSymlink, dest)
	}
	return resolved, rst, nil
}

// openPlace opens the directory of the (resolved) path p; user names the
// target in messages.
func openPlace(user, p string) (*place, error) {
	dir := filepath.Dir(p)
	d, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: target directory %s: %w", user, dir, causeOf(err))
	}
	name := filepath.Base(p)
	return &place{path: user, dir: d, name: name, partial: partialName(name)}, nil
}

// partialName is the partial output's name for a target named name:
// ".NAME.pbsdirect-partial" (see sideName).
func partialName(name string) string { return sideName(name, partialSuffix) }

// sideName is the name of a file kept beside a target named name:
// "." + name + suffix, or, where that would pass the 255-byte limit of a
// file name, the name cut short and followed by 16 hex digits of its
// SHA-256, so each target name still has one side file of its own.
func sideName(name, suffix string) string {
	const nameMax = 255
	if p := "." + name + suffix; len(p) <= nameMax {
		return p
	}
	sum := sha256.Sum256([]byte(name))
	tag := "-" + hex.EncodeToString(sum[:8])
	keep := name[:nameMax-1-len(tag)-len(suffix)]
	for !utf8.ValidString(keep) {
		keep = keep[:len(keep)-1] // do not cut a character in half
	}
	return "." + keep + tag + suffix
}

// dirName names the place's directory for messages.
func (p *place) dirName() string { return p.dir.Name() }

// createPartial creates (or takes over, after a killed run) the partial
// output and locks it: it is opened relative to the directory, never
// through a link, and held with flock(LOCK_EX|LOCK_NB). A lock held by
// another process fails at once with restore.ErrTargetBusy, naming its PID when
// /proc/locks tells it. A lock taken on a file that was renamed or removed
// meanwhile (the previous holder finished) is dropped and taken again. The
// file is empty on return, unless keep (a resume) leaves it as it is.
func (p *place) createPartial(keep bool) (*os.File, error) {
	for range 8 {
		fd, err := unix.Openat(int(p.dir.Fd()), p.partial, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
		if err != nil {
			if errors.Is(err, unix.ELOOP) {
				return nil, fmt.Errorf("%s: cannot create the partial output in %s: a symbolic link is in the way", p.path, p.dirName())
			}
			var st unix.Stat_t
			if errors.Is(err, unix.EACCES) && unix.Fstatat(int(p.dir.Fd()), p.partial, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				// The directory is writable, but a leftover of an
				// earlier run by another user is in the way.
				return nil, fmt.Errorf("%s: the partial output %s left by an earlier run (owner uid %d, mode %04o) cannot be opened: %w; remove it if no restore is running",
					p.path, filepath.Join(p.dirName(), p.partial), st.Uid, st.Mode&0o7777, err)
			}
			return nil, fmt.Errorf("%s: cannot create a file in %s: %w", p.path, p.dirName(), err)
		}
		f := os.NewFile(uintptr(fd), filepath.Join(p.dirName(), p.partial))
		if err := lockFile(f, p.path); err != nil {
			f.Close()
			return nil, err
		}
		var have, there unix.Stat_t
		if err := unix.Fstat(fd, &have); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", p.path, err)
		}
		if err := unix.Fstatat(int(p.dir.Fd()), p.partial, &there, unix.AT_SYMLINK_NOFOLLOW); err != nil || have.Ino != there.Ino || have.Dev != there.Dev {
			f.Close() // the previous holder renamed or removed it: take the new one
			continue
		}
		if have.Mode&unix.S_IFMT != unix.S_IFREG {
			f.Close()
			return nil, fmt.Errorf("%s: the partial output's name in %s is taken by something that is not a regular file", p.path, p.dirName())
		}
		if keep {
			return f, nil
		}
		if err := f.Truncate(0); err != nil {
			p.removePartial()
			f.Close()
			return nil, fmt.Errorf("%s: %w", p.path, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: %w: other runs keep replacing its partial output", p.path, restore.ErrTargetBusy)
}

// removePartial removes the partial output (call it while the lock is held).
func (p *place) removePartial() {
	unix.Unlinkat(int(p.dir.Fd()), p.partial, 0)
}

// lstatName reports what is at the target's name now (nil when nothing).
func (p *place) lstatName() (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(p.dir.Fd()), p.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	return &st, nil
}

// commit renames the partial output to the target's name — never replacing
// a file that appeared there meanwhile unless replace is set — and syncs the
// directory so that the new name is durable.
func (p *place) commit(replace bool) error {
	dfd := int(p.dir.Fd())
	var err error
	if replace {
		err = unix.Renameat(dfd, p.partial, dfd, p.name)
	} else {
		err = unix.Renameat2(dfd, p.partial, dfd, p.name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			// No RENAME_NOREPLACE here: link and unlink fail the same way.
			if err = unix.Linkat(dfd, p.partial, dfd, p.name, 0); err == nil {
				err = unix.Unlinkat(dfd, p.partial, 0)
			}
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%s: %w: it was created by another program while restoring; the restored data was removed", p.path, restore.ErrTargetExists)
	}
	if err != nil {
		return fmt.Errorf("%s: rename into place: %w", p.path, err)
	}
	return p.syncDir()
}

// syncDir makes a rename in the directory durable (fsync of the directory;
// file systems that cannot sync a directory answer EINVAL, which is ignored).
func (p *place) syncDir() error {
	if err := unix.Fsync(int(p.dir.Fd())); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%s: sync directory %s: %w", p.path, p.dirName(), err)
	}
	return nil
}

// removeName removes the target's name if it still is the file f (drill
// --remove), relative to the directory.
func (p *place) removeName(f *os.File) error {
	var have unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &have); err != nil {
		return fmt.Errorf("remove %s: %w", p.path, err)
	}
	there, err := p.lstatName()
	if err != nil {
		return err
	}
	if there == nil || there.Ino != have.Ino || there.Dev != have.Dev {
		return fmt.Errorf("remove %s: the name no longer holds the restored file; left alone", p.path)
	}
	if err := unix.Unlinkat(int(p.dir.Fd()), p.name, 0); err != nil {
		return fmt.Errorf("remove %s: %w", p.path, err)
	}
	return p.syncDir()
}

func (p *place) close() {
	if p.dir != nil {
		p.dir.Close()
		p.dir = nil
	}
}

// lockFile takes flock(LOCK_EX|LOCK_NB) on f for the whole run; a lock held
// elsewhere fails at once with restore.ErrTargetBusy naming the holder's PID when
// /proc/locks tells it. user names the target in messages.
func lockFile(f *os.File, user string) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return fmt.Errorf("%s: %w: %s", user, restore.ErrTargetBusy, holderWords(f))
		}
		return fmt.Errorf("%s: lock: %w", user, err)
	}
}

// holderWords says who holds a lock on f, for messages.
func holderWords(f *os.File) string {
	return pidWords(lockHolder(f))
}

// pidWords says who holds a lock, from its PID (0: unknown): a pbsdirect
// run only when /proc/PID/comm says so, otherwise the PID and its command.
func pidWords(pid int) string {
	if pid <= 0 {
		return "another process holds its lock"
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	name := strings.TrimSpace(string(comm))
	switch {
	case err == nil && name == "pbsdirect":
		return fmt.Sprintf("another pbsdirect run (PID %d) is writing it", pid)
	case err == nil && name != "":
		return fmt.Sprintf("its lock is held by PID %d (%s)", pid, name)
	}
	return fmt.Sprintf("its lock is held by PID %d", pid)
}

// lockHolder returns the PID of a process holding a flock on f's inode, from
// /proc/locks ("N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END"), or 0
// when none is listed (or the PID is from another PID namespace).
func lockHolder(f *os.File) int {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[1] == "->" {
			continue // a waiter, not a holder
		}
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" || fields[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// causeOf returns the OS error inside a *PathError (so a message can name
// the user's path once, keeping errors.Is on the cause).
func causeOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// PartialPath returns the name the partial output of a new file target
// has beside it: ".NAME.pbsdirect-partial".
func PartialPath(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+partialSuffix)
}
