package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// loopSectorSize attaches a loop device with logical sectors of ss bytes
// over a sparse file of size bytes; it is detached at cleanup.
func loopSectorSize(t *testing.T, size int64, ss int) string {
	t.Helper()
	if _, err := exec.LookPath("losetup"); err != nil {
		fixture.SkipOrFail(t, "losetup not available: %v", err)
	}
	backing := filepath.Join(t.TempDir(), "loop.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", "--sector-size", strconv.Itoa(ss), backing).CombinedOutput()
	if err != nil {
		fixture.SkipOrFail(t, "losetup --sector-size %d: %v: %s", ss, err, bytes.TrimSpace(out))
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// gpt512Image is a whole-disk image of size bytes written for 512-byte
// sectors: a protective MBR, the GPT header at byte 512, and data.
func gpt512Image(size int) []byte {
	img := fixture.Build(20, fixture.Region{Kind: fixture.Zero, Len: 1 << 20}, fixture.Region{Kind: fixture.Random, Len: int64(size - 1<<20)})
	copy(img[446:], []byte{0, 0, 2, 0, 0xee, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	img[510], img[511] = 0x55, 0xaa
	copy(img[512:], "EFI PART\x00\x00\x01\x00\x5c\x00\x00\x00")
	return img
}

// TestSectorSizeGuard: a whole-disk image whose GPT is for 512-byte
// sectors, restored (or drilled) onto a device with 4096-byte logical
// sectors, is refused with exit 2 naming both sizes, and the device is
// left as it was, and so is a restore --resume with nothing to resume or
// over a completed restore's record (the device changed since);
// with --force it is written exactly, with a warning naming both sizes.
// Onto a device with 512-byte sectors it is restored without a word.
// Before, it was written silently and the device had no partition table
// it could use.
func TestSectorSizeGuard(t *testing.T) {
	const size = 8 << 20
	img := gpt512Image(size)
	store := fixture.NewStore(t)
	backupImage(t, store, img)
	read := func(dev string) []byte {
		b, err := os.ReadFile(dev)
		if err != nil {
			t.Fatal(err)
		}
		return b[:size]
	}

	dev := loopSectorSize(t, 16<<20, 4096)
	// --resume with nothing to resume starts from the beginning: the same
	// check (before, it was skipped and the device written).
	for _, cmd := range [][]string{{"restore"}, {"drill"}, {"restore", "--resume"}} {
		mustFail(t, 2, []string{dev, "512-byte sectors", "4096-byte logical sectors", "nothing was written", "--force"},
			append(cmd, "--store", store, snap0, "drive-scsi0", dev)...)
		if got := read(dev); !bytes.Equal(got, make([]byte, size)) {
			t.Fatalf("%s: refused device was written", cmd)
		}
	}
	r := mustOK(t, "restore", "--force", "--store", store, snap0, "drive-scsi0", dev)
	if !strings.Contains(r.err, "warning") || !strings.Contains(r.err, "512-byte sectors") || !strings.Contains(r.err, "4096-byte") {
		t.Errorf("--force: want a warning naming both sector sizes: %v", r)
	}
	fixture.EqualBytes(t, dev, read(dev), img)
	// A record of a completed restore to the device (a --resume run's)
	// vouches for nothing on it: once it no longer holds the image, a
	// --resume that writes it again checks it too.
	jpath, err := filetarget.JournalPath(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restore.RemoveJournal(jpath) })
	mustOK(t, "restore", "--resume", "--force", "--store", store, snap0, "drive-scsi0", dev)
	if err := os.WriteFile(dev, make([]byte, size), 0); err != nil {
		t.Fatal(err)
	}
	mustFail(t, 2, []string{dev, "512-byte sectors", "4096-byte logical sectors"}, "restore", "--resume", "--store", store, snap0, "drive-scsi0", dev)
	if got := read(dev); !bytes.Equal(got, make([]byte, size)) {
		t.Fatal("--resume after a completed restore: the refused device was written")
	}

	dev512 := loopSectorSize(t, 16<<20, 512)
	r = mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", dev512)
	if strings.Contains(r.err, "sector") {
		t.Errorf("same sector size: want no warning: %v", r)
	}
	fixture.EqualBytes(t, dev512, read(dev512), img)
}

// TestDeviceHoldsFileSystem: restore and drill onto an unmounted device
// holding an ext4 file system are refused with exit 2, naming ext4 and its
// offset, the device untouched; --force overwrites it; --assume-zeroed is
// refused even with --force. Before, the file system was overwritten
// without a word.
func TestDeviceHoldsFileSystem(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		fixture.SkipOrFail(t, "mkfs.ext4 not available: %v", err)
	}
	const size = 4 << 20
	img := fixture.Build(21, fixture.Region{Kind: fixture.Random, Len: size})
	store := fixture.NewStore(t)
	backupImage(t, store, img)
	dev, _ := fixture.LoopDevice(t, 16<<20, nil)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	before, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"restore", "drill"} {
		mustFail(t, 2, []string{dev, "ext4 at byte 1080", "--force"}, cmd, "--store", store, snap0, "drive-scsi0", dev)
	}
	mustFail(t, 2, []string{dev, "ext4", "--assume-zeroed"}, "restore", "--force", "--assume-zeroed", "--store", store, snap0, "drive-scsi0", dev)
	if after, _ := os.ReadFile(dev); !bytes.Equal(after, before) {
		t.Fatal("refused device changed")
	}
	mustOK(t, "restore", "--force", "--store", store, snap0, "drive-scsi0", dev)
	after, _ := os.ReadFile(dev)
	fixture.EqualBytes(t, dev, after[:size], img)
}
