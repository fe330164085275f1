package filetarget

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// CheckNotBusy tells, before a restore opens its store, whether Open of
// path with opts would fail at once because another run holds the
// target's lock: the flock of a block device, of the partial output beside
// a file, or (with opts.Force or opts.Resume, which open it) of an existing
// file. It then returns an error wrapping restore.ErrTargetBusy that names
// path and the holder's PID when /proc/locks tells it. It only probes
// (each lock is taken and dropped at once): Open takes the lock for the
// run, so two runs on one target never both proceed. Anything else
// (nothing there, a link refused, an unreadable path) is left to Open:
// nil.
func CheckNotBusy(path string, opts Options) error {
	p, st, err := resolveTarget(path, opts.FollowSymlinks)
	if err != nil {
		return nil
	}
	partial := filepath.Join(filepath.Dir(p), partialName(filepath.Base(p)))
	switch {
	case st != nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0:
		return probeLock(p, unix.LOCK_EX, path)
	case st != nil && st.Mode().IsRegular() && opts.Force:
		return probeLock(p, unix.LOCK_EX, path)
	case st != nil && st.Mode().IsRegular() && opts.Resume:
		// Read back under a shared lock (CheckFile): only a writer
		// holding it stops that.
		return probeLock(p, unix.LOCK_SH, path)
	case st == nil:
		return probeLock(partial, unix.LOCK_EX, path)
	}
	return nil
}

// probeLock takes and drops flock(how|LOCK_NB) on the file at q (never
// through a link; how is LOCK_EX or LOCK_SH); held elsewhere, it returns restore.ErrTargetBusy naming
// user (the target as given) and the holder. A file that cannot be opened
// or locked for another reason is no proof of a holder: nil.
func probeLock(q string, how int, user string) error {
	f, err := os.OpenFile(q, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return fmt.Errorf("%s: %w: %s", user, restore.ErrTargetBusy, holderWords(f))
	}
	return nil
}
