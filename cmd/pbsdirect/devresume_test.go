package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBlockDeviceLargerAndResume: a restore onto a block device larger
// than the image says, on stderr, by how many bytes and that the bytes
// past the image are left as they were (they are); one onto a device of
// the image's size says nothing of the kind. A --resume onto the device
// that holds the image whole, with no journal (a run without --resume
// leaves none), reads it back and exits 0 "complete, nothing to do",
// writing nothing; once a byte of it changed, there is nothing to resume
// and the device's ext4 signature is refused without --force, as for any
// restore.
func TestBlockDeviceLargerAndResume(t *testing.T) {
	fixture.SkipIfShort(t)
	const size = 4 << 20
	img := filepath.Join(t.TempDir(), "ext4.raw")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		fixture.SkipOrFail(t, "mkfs.ext4: %v: %s", err, out)
	}
	data, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "64")
	tail := []byte{0xa5, 0x5a, 0x01}
	dev, _ := fixture.LoopDevice(t, size+1<<20, tail)
	readDev := func() []byte {
		b, err := os.ReadFile(dev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := readDev()
	r := mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", dev)
	if !strings.Contains(r.err, fmt.Sprintf("the block device is %d bytes larger than the image", 1<<20)) || !strings.Contains(r.err, "left as they were") {
		t.Errorf("no note that the device is larger than the image: %v", r)
	}
	after := readDev()
	fixture.EqualBytes(t, "image", after[:size], data)
	fixture.EqualBytes(t, "past the image", after[size:], before[size:])

	r = mustOK(t, "restore", "--resume", "--store", store, snap0, "drive-scsi0", dev)
	if !strings.Contains(r.out, "is complete") || !strings.Contains(r.out, "nothing to do") || strings.Contains(r.err, "starts from the beginning") {
		t.Errorf("--resume onto a device holding the image: want exit 0 \"complete, nothing to do\": %v", r)
	}
	fixture.EqualBytes(t, "after --resume", readDev(), after)

	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xfe}, size-4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mustFail(t, 2, []string{dev, "--force"}, "restore", "--resume", "--store", store, snap0, "drive-scsi0", dev)

	same, _ := fixture.LoopDevice(t, size, tail)
	if r := mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", same); strings.Contains(r.err, "larger") {
		t.Errorf("a device of the image's size: %v", r)
	}
}
