package extract

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/pxar"
)

// TestExtractSpecialRaced replaces a FIFO, device node or socket by a
// symlink out of the directory between its creation and its chmod: the
// symlink's target keeps its mode and the run fails naming the entry.
func TestExtractSpecialRaced(t *testing.T) {
	for _, kind := range []pxar.Kind{pxar.KindFIFO, pxar.KindSocket, pxar.KindDevice} {
		t.Run(kind.String(), func(t *testing.T) {
			if kind == pxar.KindDevice {
				needRoot(t)
			}
			base := t.TempDir()
			victim := filepath.Join(base, "victim")
			if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			n := &pxar.Node{Name: "sp", Kind: kind, Metadata: pxar.Metadata{Mode: 0o4777}, Device: pxar.Device{Major: 1, Minor: 3}}
			meta, _ := encode(t, dir("", n), false)
			a, err := open(t, meta, nil)
			if err != nil {
				t.Fatal(err)
			}
			o := Options{afterCreate: func(parent int, name string) {
				if err := unix.Unlinkat(parent, name, 0); err != nil {
					t.Error(err)
				}
				if err := unix.Symlinkat(victim, parent, name); err != nil {
					t.Error(err)
				}
			}}
			_, err = Run(context.Background(), a, filepath.Join(base, "out"), o)
			var fe *FSError
			if !errors.As(err, &fe) || fe.Path != "sp" {
				t.Errorf("raced entry: %v, want a file system error naming it", err)
			}
			st, err := os.Stat(victim)
			if err != nil || st.Mode().Perm() != 0o600 || st.Mode()&(os.ModeSetuid) != 0 {
				t.Errorf("the symlink's target got mode %v (%v)", st.Mode(), err)
			}
		})
	}
}

// TestExtractRootMode applies the archive root's mode to the directory
// without setuid, setgid, and group or other write unless sticky.
func TestExtractRootMode(t *testing.T) {
	for _, c := range []struct {
		mode, want uint32
		warn       bool
	}{
		{0o750, 0o750, false},
		{0o7777, 0o1777, true},
		{0o2775, 0o755, true},
		{0o4757, 0o755, true},
		{0o1777, 0o1777, false},
	} {
		root := dir("", file("a", "x"))
		root.Mode = uint64(c.mode)
		meta, _ := encode(t, root, false)
		a, err := open(t, meta, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(t.TempDir(), "out")
		rep, err := Run(context.Background(), a, d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil || st.Mode&0o7777 != c.want {
			t.Errorf("root mode %#o: DIR %#o, want %#o (%v)", c.mode, st.Mode&0o7777, c.want, err)
		}
		if (rep.Warnings > 0) != c.warn {
			t.Errorf("root mode %#o: warnings %v", c.mode, rep.WarningList)
		}
	}
}

// TestExtractXattrTooBig: an extended attribute the file system cannot
// hold is a warning, the extraction goes on.
func TestExtractXattrTooBig(t *testing.T) {
	f := file("big", "content")
	f.Xattrs = []pxar.Xattr{{Name: []byte("user.big"), Value: []byte(strings.Repeat("v", 64<<10))}}
	meta, _ := encode(t, dir("", f, file("after", "y")), false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(t.TempDir(), "out")
	rep, err := Run(context.Background(), a, d, Options{})
	if err != nil {
		t.Fatalf("a 64 KiB xattr: %v", err)
	}
	if n, err := unix.Getxattr(filepath.Join(d, "big"), "user.big", nil); err == nil && n == 64<<10 {
		t.Skip("the file system holds a 64 KiB xattr")
	}
	if rep.Warnings != 1 || !strings.Contains(rep.WarningList[0], "user.big") {
		t.Errorf("report %+v: want one warning naming user.big", rep)
	}
	if b, err := os.ReadFile(filepath.Join(d, "after")); err != nil || string(b) != "y" {
		t.Errorf("after the xattr: %q %v", b, err)
	}
}

// TestExtractBusy: a directory another run holds is refused with ErrBusy
// before anything is written; a name already there that this run did not
// write is no archive error.
func TestExtractBusy(t *testing.T) {
	meta, _ := encode(t, dir("", file("a", "x")), false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		if _, err := Run(context.Background(), a, d, Options{Force: force}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "being written by another pbsdirect run") {
			t.Errorf("force %v: %v, want ErrBusy", force, err)
		}
	}
	if ents, _ := os.ReadDir(d); len(ents) != 0 {
		t.Errorf("busy run wrote %d entries", len(ents))
	}
	unix.Close(fd)
	if _, err := Run(context.Background(), a, d, Options{}); err != nil {
		t.Errorf("once released: %v", err)
	}

	// Something else creates "b" while "a" is extracted: an entry this
	// run did not write, not a duplicate in the archive.
	fifo := &pxar.Node{Name: "a", Kind: pxar.KindFIFO, Metadata: pxar.Metadata{Mode: 0o600}}
	meta, _ = encode(t, dir("", fifo, file("b", "y")), false)
	a, err = open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{afterCreate: func(parent int, name string) {
		fd, err := unix.Openat(parent, "b", unix.O_CREAT|unix.O_WRONLY, 0o600)
		if err != nil {
			t.Error(err)
		}
		unix.Close(fd)
	}}
	_, err = Run(context.Background(), a, t.TempDir(), o)
	var fe *FSError
	if !errors.As(err, &fe) || errors.Is(err, ErrArchive) || fe.Path != "b" {
		t.Errorf("entry made by another: %v, want a file system error naming it", err)
	}
}

// asNobody runs f with effective uid and gid 65534 (saved ids stay root's,
// given back afterwards); it skips when not root.
func asNobody(t *testing.T, f func()) {
	t.Helper()
	needRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.Setresgid(-1, 65534, -1); err != nil {
		t.Skip(err)
	}
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		syscall.Setresgid(-1, 0, -1)
		t.Skip(err)
	}
	defer func() {
		if err := syscall.Setresuid(-1, 0, -1); err != nil {
			panic(err)
		}
		if err := syscall.Setresgid(-1, 0, -1); err != nil {
			panic(err)
		}
	}()
	f()
}

// nobodyDir returns a new directory owned by uid 65534 in a directory it
// can reach.
func nobodyDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "extract-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(base, "dir")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestExtractForceReadOnlyDir: as a user other than root, --force replaces
// entries in read-only directories of the caller's (DIR, those below, and
// those above an Include path), which get their modes back.
func TestExtractForceReadOnlyDir(t *testing.T) {
	ro := dir("ro", file("f", "new"))
	ro.Mode = 0o555
	root := dir("", ro, file("top", "new top"))
	root.Mode = 0o755
	meta, _ := encode(t, root, false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, include := range [][]string{nil, {"ro/f", "top"}} {
		d := nobodyDir(t)
		t.Cleanup(func() { os.Chmod(d, 0o755); os.Chmod(filepath.Join(d, "ro"), 0o755) })
		var st unix.Stat_t
		asNobody(t, func() {
			os.Mkdir(filepath.Join(d, "ro"), 0o755)
			os.WriteFile(filepath.Join(d, "ro", "f"), []byte("old"), 0o644)
			os.WriteFile(filepath.Join(d, "top"), []byte("old"), 0o644)
			os.Chmod(filepath.Join(d, "ro"), 0o555)
			os.Chmod(d, 0o555)
			_, err = Run(context.Background(), a, d, Options{Force: true, Include: include})
		})
		if err != nil {
			t.Fatalf("include %q: %v", include, err)
		}
		for p, want := range map[string]string{"ro/f": "new", "top": "new top"} {
			if b, err := os.ReadFile(filepath.Join(d, p)); err != nil || string(b) != want {
				t.Errorf("include %q: %s: %q %v", include, p, b, err)
			}
		}
		// DIR gets the archive root's mode, with Include too.
		for p, want := range map[string]uint32{".": 0o755, "ro": 0o555} {
			if err := unix.Stat(filepath.Join(d, p), &st); err != nil || st.Mode&0o7777 != want {
				t.Errorf("include %q: %s mode %#o, want %#o (%v)", include, p, st.Mode&0o7777, want, err)
			}
		}
	}
}

// TestExtractIncludeForceSymlink: with Include and Force a symlink where a
// directory above the included path goes is replaced, never followed.
func TestExtractIncludeForceSymlink(t *testing.T) {
	meta, _ := encode(t, dir("", dir("sub", file("passwd", "x")), dir("f", file("g", "y"))), false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(d, "sub"))
	os.WriteFile(filepath.Join(d, "f"), []byte("a file"), 0o644)
	if _, err := Run(context.Background(), a, d, Options{Force: true, Include: []string{"sub/passwd", "f/g"}}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("written through the symlink: %v", ents)
	}
	for p, want := range map[string]string{"sub/passwd": "x", "f/g": "y"} {
		if b, err := os.ReadFile(filepath.Join(d, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	if st, err := os.Lstat(filepath.Join(d, "sub")); err != nil || !st.IsDir() {
		t.Errorf("sub: %v %v, want a directory", st, err)
	}
}
