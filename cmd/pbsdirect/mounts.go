package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// fstabMountPoints returns the mount points an fstab names (absolute
// paths other than /; swap and "none" left out).
func fstabMountPoints(fstab io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(fstab)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || !strings.HasPrefix(f[1], "/") || f[1] == "/" {
			continue
		}
		out = append(out, filepath.Clean(unescapeMount(f[1])))
	}
	return out
}

// unitMountPoint returns the Where= of a systemd mount unit (PBS mounts
// the disks of its datastores with such units), or "".
func unitMountPoint(unit io.Reader) string {
	sc := bufio.NewScanner(unit)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Where="); ok && strings.HasPrefix(v, "/") {
			return filepath.Clean(v)
		}
	}
	return ""
}

// mountedPoints returns the mount points of a mountinfo
// (/proc/self/mountinfo).
func mountedPoints(mountinfo io.Reader) map[string]bool {
	mounted := map[string]bool{}
	sc := bufio.NewScanner(mountinfo)
	for sc.Scan() {
		// ID parent major:minor root mount-point options …
		if f := strings.Fields(sc.Text()); len(f) >= 5 {
			mounted[filepath.Clean(unescapeMount(f[4]))] = true
		}
	}
	return mounted
}

// unmountedAncestor returns dir or its nearest parent that is a configured
// mount point (listed: fstab entries, mount units) when nothing is mounted
// there now (mounted), or "" when the nearest configured mount point is
// mounted or there is none. A backup that would create a datastore there
// would write to the file system below the mount point: the root file
// system, when the backup disk failed to mount. dir and listed are paths
// with their symbolic links resolved.
func unmountedAncestor(dir string, listed []string, mounted map[string]bool) string {
	configured := map[string]bool{}
	for _, p := range listed {
		configured[p] = true
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if configured[p] {
			if mounted[p] {
				return ""
			}
			return p
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}

// resolvePath returns p with the symbolic links of its longest existing
// prefix resolved (the rest, not there yet, appended as it is).
func resolvePath(p string) string {
	rest := ""
	for cur := filepath.Clean(p); ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// unescapeMount undoes the octal escapes (\040 for a space) of fstab and
// mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// configuredMountPoints returns the mount points of /etc/fstab and of the
// systemd mount units in /etc/systemd/system, symbolic links resolved.
func configuredMountPoints() []string {
	var listed []string
	if f, err := os.Open("/etc/fstab"); err == nil {
		listed = fstabMountPoints(f)
		f.Close()
	}
	units, _ := filepath.Glob("/etc/systemd/system/*.mount")
	for _, u := range units {
		if f, err := os.Open(u); err == nil {
			if p := unitMountPoint(f); p != "" {
				listed = append(listed, p)
			}
			f.Close()
		}
	}
	for i, p := range listed {
		listed[i] = resolvePath(p)
	}
	return listed
}

// checkNewDatastore is called before a backup into the directory dir: when
// dir holds no datastore yet (no .chunks), it refuses (exit 3, as a store
// that is not there) when dir is at or below a configured mount point
// (/etc/fstab, a systemd mount unit) where nothing is mounted, and
// otherwise says on stderr that a new datastore is made. A dir that is not
// a directory is a usage error.
func checkNewDatastore(dir string, stderr io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return usagef("--store %s: not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(abs, ".chunks")); err == nil {
		return nil
	}
	if mi, err := os.Open("/proc/self/mountinfo"); err == nil {
		mounted := mountedPoints(mi)
		mi.Close()
		if p := unmountedAncestor(resolvePath(abs), configuredMountPoints(), mounted); p != "" {
			return &storeMissingError{fmt.Errorf("%s: no datastore there, and %s is a configured mount point with nothing mounted: not creating one on the file system below it", dir, p)}
		}
	}
	fmt.Fprintf(stderr, "pbsdirect: note: %s holds no datastore: creating a new one\n", dir)
	return nil
}
