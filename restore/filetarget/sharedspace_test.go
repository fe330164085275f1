package filetarget_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// smallBtrfs mounts a fresh btrfs of size bytes (on a loop device, with
// mount options opts) and returns its mount point.
func smallBtrfs(t *testing.T, size int64, opts string) string {
	t.Helper()
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil {
		fixture.SkipOrFail(t, "mkfs.btrfs not available: %v", err)
	}
	dev, _ := fixture.LoopDevice(t, size, nil)
	if out, err := exec.Command("mkfs.btrfs", "-q", "-f", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs: %v %s", err, out)
	}
	mnt := t.TempDir()
	if err := unix.Mount(dev, mnt, "btrfs", 0, opts); err != nil {
		fixture.SkipOrFail(t, "mount btrfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("umount %s: %v", mnt, err)
		}
	})
	return mnt
}

// TestForceSharedExtentsNoSpace: an existing file restored over with
// --force on btrfs, with less free space than the image's data, is refused
// before writing (ErrNoSpace, exit 3, naming needed and available bytes),
// the file unchanged: when its extents are shared with a snapshot or a
// reflinked copy (a Proxmox VE btrfs storage after qm snapshot, cp
// --reflink), and also when they are not, since btrfs copies on write and
// allocates the new data before freeing the old (before, that case passed
// the check, ran out of space half-way and destroyed the file). A file set
// NOCOW (chattr +C) is overwritten in place and fits; so may an image on a
// compress mount, whose data may take far less than its size.
func TestForceSharedExtentsNoSpace(t *testing.T) {
	const fileSize = 64 << 20
	for _, c := range []struct {
		name     string
		opts     string // mount options
		nocow    bool   // chattr +C on the directory before the file is written
		share    func(t *testing.T, mnt, file string)
		wantFail string // a word the refusal says; "" for none
	}{
		{"snapshot", "", false, func(t *testing.T, mnt, _ string) {
			run(t, "btrfs", "-q", "subvolume", "snapshot", filepath.Join(mnt, "images"), filepath.Join(mnt, "images@before-upgrade"))
		}, "shared"},
		{"reflink", "", false, func(t *testing.T, mnt, file string) {
			run(t, "cp", "--reflink=always", file, filepath.Join(mnt, "copy.raw"))
		}, "shared"},
		{"not-shared", "", false, func(*testing.T, string, string) {}, "copies on write"},
		{"nocow", "", true, func(*testing.T, string, string) {}, ""},
		{"compress", "compress=zstd", false, func(*testing.T, string, string) {}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			mnt := smallBtrfs(t, 256<<20, c.opts)
			run(t, "btrfs", "-q", "subvolume", "create", filepath.Join(mnt, "images"))
			if c.nocow {
				run(t, "chattr", "+C", filepath.Join(mnt, "images"))
			}
			old := fixture.Build(54, fixture.Region{Kind: fixture.Random, Len: fileSize})
			p := fixture.WriteFile(t, filepath.Join(mnt, "images"), "disk.raw", old)
			c.share(t, mnt, p)
			unix.Sync()
			// Leave about 24 MiB free: less than the image's data, more
			// than nothing.
			var sf unix.Statfs_t
			if err := unix.Statfs(mnt, &sf); err != nil {
				t.Fatal(err)
			}
			if fill := int64(sf.Bavail)*sf.Bsize - 24<<20; fill > 0 {
				f, err := os.Create(filepath.Join(mnt, "fill"))
				if err != nil {
					t.Fatal(err)
				}
				if err := unix.Fallocate(int(f.Fd()), 0, 0, fill); err != nil {
					t.Fatalf("fill: %v", err)
				}
				f.Close()
				unix.Sync()
			}
			tg, err := filetarget.Open(p, fileSize, filetarget.Options{Force: true, DataBytes: fileSize})
			if c.wantFail == "" {
				if err != nil {
					t.Fatalf("refused a file overwritten in place, or data that may compress: %v", err)
				}
				tg.Close(true)
				return
			}
			if err == nil {
				tg.Close(true)
				t.Fatal("refused nothing: the restore would run out of space half-way and destroy the file")
			}
			if !errors.Is(err, restore.ErrNoSpace) || !strings.Contains(err.Error(), "nothing was written") ||
				!strings.Contains(err.Error(), c.wantFail) || !strings.Contains(err.Error(), "needed") {
				t.Fatalf("got %v, want ErrNoSpace saying %q, needed and available", err, c.wantFail)
			}
			fixture.Equal(t, p, old)
		})
	}
}

// run runs a command, failing the test on error.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// TestNoSpaceSaidOnce: a new file whose data does not fit in the free space
// of a plain file system (a tmpfs) is refused with ErrNoSpace saying the
// data bytes and the free bytes once each (before, the same two numbers
// again as "needed" and "available").
func TestNoSpaceSaidOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		fixture.SkipOrFail(t, "mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=4m"); err != nil {
		fixture.SkipOrFail(t, "mount tmpfs: %v", err)
	}
	defer unix.Unmount(mnt, 0)
	const data = 8 << 20
	tg, err := filetarget.Open(filepath.Join(mnt, "disk.raw"), data, filetarget.Options{DataBytes: data})
	if err == nil {
		tg.Close(false)
		t.Fatal("8 MiB of data on a 4 MiB file system was not refused")
	}
	msg := err.Error()
	if !errors.Is(err, restore.ErrNoSpace) || !strings.Contains(msg, "8388608 bytes of data") || !strings.Contains(msg, "bytes free") {
		t.Fatalf("got %v, want ErrNoSpace naming the data and the free bytes", err)
	}
	if strings.Count(msg, "8388608") != 1 || strings.Contains(msg, "available") {
		t.Errorf("the refusal says its numbers twice: %v", err)
	}
}
