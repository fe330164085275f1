package filetarget_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestTargetLock: a target is locked from OpenTarget to Close. A second
// OpenTarget (or blob WriteFile) of the same target fails at once with
// ErrTargetBusy naming the holder's PID, for a new file, an existing file
// (Force) and a block device; after the first is closed, the target is
// free again.
func TestTargetLock(t *testing.T) {
	const size = 2 << 20
	pid := fmt.Sprintf("PID %d", os.Getpid())
	for _, kind := range []string{"new-file", "existing-file", "block-device"} {
		t.Run(kind, func(t *testing.T) {
			var p string
			switch kind {
			case "new-file":
				p = filepath.Join(t.TempDir(), "new.raw")
			case "existing-file":
				p = fixture.WriteFile(t, t.TempDir(), "old.raw", bytes.Repeat([]byte{1}, 4096))
			default:
				p, _ = fixture.LoopDevice(t, size, []byte{7})
			}
			opts := filetarget.Options{Force: true}
			first, err := filetarget.Open(p, size, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = filetarget.Open(p, size, opts)
			if !errors.Is(err, restore.ErrTargetBusy) || !strings.Contains(err.Error(), pid) || !strings.Contains(err.Error(), p) {
				t.Fatalf("second writer: got %v, want ErrTargetBusy naming %s and %s", err, p, pid)
			}
			if strings.Contains(err.Error(), "partial") {
				t.Errorf("message names the internal partial file: %v", err)
			}
			if kind != "block-device" {
				if err := filetarget.WriteFile(p, []byte("blob"), opts); !errors.Is(err, restore.ErrTargetBusy) {
					t.Errorf("blob into a locked target: got %v, want ErrTargetBusy", err)
				}
			}
			if err := first.WriteAt(bytes.Repeat([]byte{9}, 4096), 0); err != nil {
				t.Fatal(err)
			}
			if err := first.Close(false); err != nil {
				t.Fatal(err)
			}
			second, err := filetarget.Open(p, size, opts)
			if err != nil {
				t.Fatalf("after the first closed: %v", err)
			}
			second.Close(true)
			if kind != "block-device" {
				ents, _ := os.ReadDir(filepath.Dir(p))
				if len(ents) != 1 {
					t.Errorf("files left beside the target: %v", ents)
				}
			}
		})
	}
}

// TestTargetChecks: what can be checked before the work is checked in
// OpenTarget, and a refusal leaves an existing target exactly as it was and
// names the user's path, never the partial name.
func TestTargetChecks(t *testing.T) {
	const size = 1 << 20
	qcow := append([]byte("QFI\xfb\x00\x00\x00\x03"), make([]byte, 64<<10)...)
	luks := append([]byte("LUKS\xba\xbe\x00\x02"), make([]byte, 64<<10)...)
	vhdx := append([]byte("vhdxfile"), make([]byte, 64<<10)...)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the target path
		opts  filetarget.Options
		want  error  // errors.Is
		words string // in the message
	}{
		{"missing-directory", func(t *testing.T, dir string) string { return filepath.Join(dir, "nodir", "sub", "t.img") },
			filetarget.Options{}, os.ErrNotExist, "target directory"},
		{"dangling-link", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "t.img")
			mustSymlink(t, filepath.Join(dir, "gone.img"), p)
			return p
		}, filetarget.Options{Force: true}, restore.ErrTargetSymlink, "gone.img"},
		{"dangling-link-followed", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "t.img")
			mustSymlink(t, filepath.Join(dir, "gone.img"), p)
			return p
		}, filetarget.Options{Force: true, FollowSymlinks: true}, restore.ErrTargetSymlink, "dangling"},
		{"link-to-file", func(t *testing.T, dir string) string {
			fixture.WriteFile(t, dir, "real.img", []byte("keep me"))
			p := filepath.Join(dir, "t.img")
			mustSymlink(t, "real.img", p)
			return p
		}, filetarget.Options{Force: true}, restore.ErrTargetSymlink, "--follow-symlinks"},
		{"qcow2", func(t *testing.T, dir string) string { return fixture.WriteFile(t, dir, "vm.qcow2", qcow) },
			filetarget.Options{Force: true}, restore.ErrTargetFormat, "qemu-img convert"},
		{"vhdx", func(t *testing.T, dir string) string { return fixture.WriteFile(t, dir, "vm.vhdx", vhdx) },
			filetarget.Options{Force: true}, restore.ErrTargetFormat, "VHDX"},
		{"luks-file", func(t *testing.T, dir string) string { return fixture.WriteFile(t, dir, "crypt.img", luks) },
			filetarget.Options{Force: true}, restore.ErrTargetFormat, "LUKS"},
		{"loop-backing-file", func(t *testing.T, dir string) string {
			_, backing := fixture.LoopDevice(t, size, []byte{3})
			return backing
		}, filetarget.Options{Force: true}, restore.ErrTargetInUse, "losetup -d"},
		{"no-space", func(t *testing.T, dir string) string { return fixture.WriteFile(t, dir, "small.img", []byte("old")) },
			filetarget.Options{Force: true, DataBytes: 1 << 60}, restore.ErrNoSpace, "nothing was written"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := c.setup(t, dir)
			before := snapshotDir(t, dir)
			_, err := filetarget.Open(p, size, c.opts)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("got %v, want %v naming %s and %q", err, c.want, p, c.words)
			}
			if strings.Contains(err.Error(), "partial") {
				t.Errorf("message names the internal partial file: %v", err)
			}
			if after := snapshotDir(t, dir); after != before {
				t.Errorf("refused target changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	t.Run("luks-device", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, size, []byte("LUKS\xba\xbe\x00\x02"))
		if _, err := filetarget.Open(dev, size, filetarget.Options{}); !errors.Is(err, restore.ErrTargetFormat) || !strings.Contains(err.Error(), "wipefs") {
			t.Fatalf("got %v, want ErrTargetFormat with a wipefs hint", err)
		}
	})
	t.Run("link-to-device-followed", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, size, []byte{1})
		p := filepath.Join(t.TempDir(), "by-id")
		mustSymlink(t, dev, p)
		tg, err := filetarget.Open(p, size, filetarget.Options{})
		if err != nil {
			t.Fatalf("a link to a block device (as /dev/VG/LV) must be followed: %v", err)
		}
		tg.Close(true)
	})
}

// TestTargetSymlinkSame: a symbolic link at TARGET is treated the same for
// images (OpenTarget) and blobs (WriteFile): refused without
// FollowSymlinks, leaving link and file alone; with it, the file the link
// names gets the data and the link stays.
func TestTargetSymlinkSame(t *testing.T) {
	write := map[string]func(p string, opts filetarget.Options) error{
		"image": func(p string, opts filetarget.Options) error {
			tg, err := filetarget.Open(p, 4096, opts)
			if err != nil {
				return err
			}
			if err := tg.WriteAt(bytes.Repeat([]byte{'x'}, 4096), 0); err != nil {
				return err
			}
			return tg.Close(false)
		},
		"blob": func(p string, opts filetarget.Options) error {
			return filetarget.WriteFile(p, bytes.Repeat([]byte{'x'}, 4096), opts)
		},
	}
	for _, kind := range []string{"image", "blob"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			real := fixture.WriteFile(t, dir, "real.img", []byte("old"))
			link := filepath.Join(dir, "link.img")
			mustSymlink(t, "real.img", link)
			err := write[kind](link, filetarget.Options{Force: true})
			if !errors.Is(err, restore.ErrTargetSymlink) || !strings.Contains(err.Error(), link) {
				t.Fatalf("without FollowSymlinks: got %v, want ErrTargetSymlink naming %s", err, link)
			}
			fixture.Equal(t, real, []byte("old"))
			if err := write[kind](link, filetarget.Options{Force: true, FollowSymlinks: true}); err != nil {
				t.Fatalf("with FollowSymlinks: %v", err)
			}
			fixture.Equal(t, real, bytes.Repeat([]byte{'x'}, 4096))
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link itself was replaced: %v %v", st, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 2 {
				t.Errorf("files left: %v", ents)
			}
		})
	}
}

// TestTargetDirectoryMoved: the partial output is created relative to the
// target directory's descriptor: renaming the directory and putting a link
// in its place mid-restore neither redirects the output nor leaves the
// partial file behind after an abort.
func TestTargetDirectoryMoved(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, abort := range []bool{true, false} {
		p := filepath.Join(dir, fmt.Sprintf("t-%v.img", abort))
		tg, err := filetarget.Open(p, 4096, filetarget.Options{})
		if err != nil {
			t.Fatal(err)
		}
		moved := filepath.Join(base, fmt.Sprintf("moved-%v", abort))
		if err := os.Rename(dir, moved); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, other, dir)
		if err := tg.WriteAt(bytes.Repeat([]byte{'y'}, 4096), 0); err != nil {
			t.Fatal(err)
		}
		err = tg.Close(abort)
		if err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(other); len(ents) != 0 {
			t.Errorf("abort=%v: written through the link: %v", abort, ents)
		}
		ents, _ := os.ReadDir(moved)
		if abort && len(ents) != 0 {
			t.Errorf("aborted: left in the moved directory: %v", ents)
		}
		if !abort {
			if len(ents) != 1 {
				t.Fatalf("committed: moved directory holds %v", ents)
			}
			fixture.Equal(t, filepath.Join(moved, filepath.Base(p)), bytes.Repeat([]byte{'y'}, 4096))
		}
		os.Remove(dir)
		if err := os.Rename(moved, dir); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, filepath.Base(p)))
	}
}

// TestThinDeviceZero: zero ranges on a loop device over a sparse file (a
// thin volume) are discarded with guaranteed zeroing: the backing file
// stays sparse, and the ranges read as zeros even where data was before.
func TestThinDeviceZero(t *testing.T) {
	const size = 16 << 20
	dev, backing := fixture.LoopDevice(t, size, nil)
	tg, err := filetarget.Open(dev, size, filetarget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.WriteAt(alignedPage(5), 8<<20); err != nil { // data that a zero range must clear
		t.Fatal(err)
	}
	if err := tg.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := tg.Zero(0, size); err != nil {
		t.Fatal(err)
	}
	if err := tg.WriteAt(alignedPage(6), 0); err != nil {
		t.Fatal(err)
	}
	if err := tg.Close(false); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sync").CombinedOutput(); err != nil {
		t.Fatalf("sync: %v %s", err, out)
	}
	want := make([]byte, size)
	copy(want, alignedPage(6))
	fixture.Equal(t, dev, want)
	st, err := os.Stat(backing)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := st.Sys().(*syscall.Stat_t).Blocks * 512; alloc > 1<<20+1<<20 {
		t.Errorf("thin backing file has %d bytes allocated for 1 MiB of data", alloc)
	}
}

func mustSymlink(t *testing.T, old, new string) {
	t.Helper()
	if err := os.Symlink(old, new); err != nil {
		t.Fatal(err)
	}
}

// snapshotDir describes every entry of dir: name, size, allocated blocks,
// mode and a content hash, for before/after comparisons.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		st, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		fmt.Fprintf(&b, "%s:%d:%d:%v", e.Name(), st.Size(), sys.Blocks, st.Mode())
		if st.Mode().IsRegular() {
			data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			fmt.Fprintf(&b, ":%x", data[:min(len(data), 16)])
			fmt.Fprintf(&b, ":%d", bytes.Count(data, []byte{0}))
		}
		b.WriteString(" ")
	}
	return b.String()
}
