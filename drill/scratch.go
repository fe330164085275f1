package drill

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/sys/unix"
)

// sideFile matches the partial output (".NAME.pbsdirect-partial") and the
// resume journal (".NAME.pbsdirect-journal") a fleet drill's copy NAME
// ("NNN-…", Fleet's names) leaves in the scratch directory when its run
// is killed; the first group is the copy's name.
var sideFile = regexp.MustCompile(`^\.(\d{3}-.+)\.pbsdirect-(?:partial|journal)$`)

// copyFile matches the name of a complete copy Fleet makes: the item's
// number, then its snapshot (namespace and TYPE/ID/TIME, "/" made "_" and
// ":" dropped) and archive ("NNN-vm_100_2026-11-29T100000Z-drive-scsi0.img").
var copyFile = regexp.MustCompile(`^\d{3}-(?:.+_)?(?:vm|ct|host)_.+$`)

// CleanScratch removes from the directory scratch the partial outputs and
// journals of fleet drill copies that no run holds: those whose partial
// output is missing or not locked (flock) by a restore, e.g. left by a
// drill killed with SIGKILL, whose next run names its copies otherwise;
// and the complete copies (regular files named as Fleet names them) that
// no run holds locked, e.g. left by a drill killed while it read one back
// or booted it, which would refuse the next run's copy of that name.
// It returns the names removed; an error is the directory's, or that of a
// file it could not remove (those before it are removed).
func CleanScratch(scratch string) ([]string, error) {
	entries, err := os.ReadDir(scratch)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		lock := filepath.Join(scratch, e.Name()) // a complete copy: locked itself while a drill holds it
		if m := sideFile.FindStringSubmatch(e.Name()); m != nil {
			lock = filepath.Join(scratch, "."+m[1]+".pbsdirect-partial")
		} else if !copyFile.MatchString(e.Name()) {
			continue
		}
		if held(lock) {
			continue
		}
		if err := os.Remove(filepath.Join(scratch, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// held reports whether another open file description holds a flock on
// the partial output at p (a restore writing it); a file that is missing
// or cannot be probed is not held.
func held(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
