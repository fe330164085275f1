// Package mountpoint tells whether a directory lies at or below a mount
// point that is configured (/etc/fstab, a systemd mount unit) but has
// nothing mounted now: a directory created there lands on the file system
// below the mount point (the root file system, when a backup disk failed
// to mount). It parses fstab, mount units and mountinfo; it knows nothing
// of PBS.
package mountpoint

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Fstab returns the mount points an fstab names (absolute paths other than
// /; swap and "none" left out), octal escapes undone.
func Fstab(fstab io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(fstab)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || !strings.HasPrefix(f[1], "/") || f[1] == "/" {
			continue
		}
		out = append(out, filepath.Clean(unescape(f[1])))
	}
	return out
}

// Unit returns the Where= of a systemd mount unit (PBS mounts the disks of
// its datastores with such units), or "".
func Unit(unit io.Reader) string {
	sc := bufio.NewScanner(unit)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Where="); ok && strings.HasPrefix(v, "/") {
			return filepath.Clean(v)
		}
	}
	return ""
}

// Mounted returns the mount points of a mountinfo (/proc/self/mountinfo)
// as a set.
func Mounted(mountinfo io.Reader) map[string]bool {
	mounted := map[string]bool{}
	sc := bufio.NewScanner(mountinfo)
	for sc.Scan() {
		// ID parent major:minor root mount-point options …
		if f := strings.Fields(sc.Text()); len(f) >= 5 {
			mounted[filepath.Clean(unescape(f[4]))] = true
		}
	}
	return mounted
}

// UnmountedAncestor returns dir or its nearest parent that is a configured
// mount point (listed: fstab entries, mount units) when nothing is mounted
// there now (mounted), or "" when the nearest configured mount point is
// mounted or there is none. dir and listed are paths with their symbolic
// links resolved.
func UnmountedAncestor(dir string, listed []string, mounted map[string]bool) string {
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

// ResolvePath returns p with the symbolic links of its longest existing
// prefix resolved (the rest, not there yet, appended as it is).
func ResolvePath(p string) string {
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

// unescape undoes the octal escapes (\040 for a space) of fstab and
// mountinfo paths.
func unescape(s string) string {
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

// Configured returns the mount points of /etc/fstab and of the systemd
// mount units in /etc/systemd/system, symbolic links resolved; files that
// cannot be read are left out.
func Configured() []string {
	var listed []string
	if f, err := os.Open("/etc/fstab"); err == nil {
		listed = Fstab(f)
		f.Close()
	}
	units, _ := filepath.Glob("/etc/systemd/system/*.mount")
	for _, u := range units {
		if f, err := os.Open(u); err == nil {
			if p := Unit(f); p != "" {
				listed = append(listed, p)
			}
			f.Close()
		}
	}
	for i, p := range listed {
		listed[i] = ResolvePath(p)
	}
	return listed
}

// Unmounted returns the configured mount point (Configured) at or above
// the absolute path dir where nothing is mounted now
// (/proc/self/mountinfo), or "" when there is none, the nearest one is
// mounted, or mountinfo cannot be read.
func Unmounted(dir string) string {
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	mounted := Mounted(mi)
	mi.Close()
	return UnmountedAncestor(ResolvePath(dir), Configured(), mounted)
}
