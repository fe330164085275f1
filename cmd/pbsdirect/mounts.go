package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// unmountedAncestor returns the nearest of dir and its parents that
// /etc/fstab (fstab) names as a mount point while nothing is mounted there
// now (mountinfo, /proc/self/mountinfo), or "" when there is none. A
// backup that would create a datastore there would write to the file
// system below the mount point: the root file system, when the backup
// disk failed to mount.
func unmountedAncestor(dir string, fstab, mountinfo io.Reader) string {
	listed := map[string]bool{}
	sc := bufio.NewScanner(fstab)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || !strings.HasPrefix(f[1], "/") || f[1] == "/" {
			continue
		}
		listed[filepath.Clean(unescapeMount(f[1]))] = true
	}
	mounted := map[string]bool{}
	sc = bufio.NewScanner(mountinfo)
	for sc.Scan() {
		// ID parent major:minor root mount-point options …
		if f := strings.Fields(sc.Text()); len(f) >= 5 {
			mounted[filepath.Clean(unescapeMount(f[4]))] = true
		}
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if listed[p] && !mounted[p] {
			return p
		}
		if p == filepath.Dir(p) {
			return ""
		}
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

// checkNewDatastore is called before a backup creates a datastore in dir
// (it has no .chunks yet): it refuses (exit 3, as a store that is not
// there) when dir is at or below a mount point of /etc/fstab where nothing
// is mounted, and otherwise says on stderr that a new datastore is made.
func checkNewDatastore(dir string, stderr io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, ".chunks")); err == nil {
		return nil
	}
	fstab, ferr := os.Open("/etc/fstab")
	mountinfo, merr := os.Open("/proc/self/mountinfo")
	if ferr == nil && merr == nil {
		defer fstab.Close()
		defer mountinfo.Close()
		if p := unmountedAncestor(abs, fstab, mountinfo); p != "" {
			return &storeMissingError{fmt.Errorf("%s: no datastore there, and %s is a mount point in /etc/fstab with nothing mounted: not creating one on the file system below it", dir, p)}
		}
	} else {
		if ferr == nil {
			fstab.Close()
		}
		if merr == nil {
			mountinfo.Close()
		}
	}
	fmt.Fprintf(stderr, "pbsdirect: note: %s holds no datastore: creating a new one\n", dir)
	return nil
}
