package fusefs

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Detach unmounts the file system lazily (umount -l, MNT_DETACH): it goes
// from the directory tree now, and the kernel frees it when its last user
// goes. Like Unmount, it returns nil when the directory is no longer a
// FUSE mount point, however it came off.
func (m *Mount) Detach() error {
	err := unix.Unmount(m.dir, unix.MNT_DETACH)
	if err != nil && m.gone() {
		return nil
	}
	return err
}

// gone reports whether m's directory is known to be no FUSE mount point
// any more: unmounted meanwhile (by a fusermount3 -u that then failed, its
// process killed by a signal sent to the process group, or from outside).
func (m *Mount) gone() bool {
	dir := m.dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	mounted, err := fuseMountPoint(f, dir)
	return err == nil && !mounted
}

// fuseMountPoint reports whether the mountinfo table read from r (the
// format of /proc/self/mountinfo) has a FUSE file system mounted at dir.
func fuseMountPoint(r io.Reader, dir string) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMountinfo(fields[4]) != dir {
			continue
		}
		for i := 5; i+1 < len(fields); i++ {
			if fields[i] == "-" && strings.HasPrefix(fields[i+1], "fuse") {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
