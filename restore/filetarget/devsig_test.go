package filetarget_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// writeAt writes b at off of the device dev.
func writeAt(t *testing.T, dev string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// mkfsOn runs a mkfs-like tool on dev (skipped without it, failed in CI).
func mkfsOn(tool string, args ...string) func(t *testing.T, dev string) {
	return func(t *testing.T, dev string) {
		t.Helper()
		if _, err := exec.LookPath(tool); err != nil {
			fixture.SkipOrFail(t, "%s not available: %v", tool, err)
		}
		if out, err := exec.Command(tool, append(args, dev)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", tool, err, out)
		}
	}
}

// TestDeviceSignaturesRefused: a block device that holds a file system,
// a partition table, an LVM physical volume, an MD RAID member or a LUKS
// header is refused without --force (ErrTargetNotEmpty, a usage mistake:
// exit 2), naming what was found and where, and left as it was; with
// Force it is opened; with AssumeZeroed it is refused even with Force.
// A zeroed device, or one with unknown content, is accepted. Before, each
// was overwritten without a word.
func TestDeviceSignaturesRefused(t *testing.T) {
	fixture.SkipIfShort(t) // loop devices and mkfs: make test runs it
	const size = 128 << 20
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dev string)
		want  string // "" for accepted
	}{
		{"zeros", func(*testing.T, string) {}, ""},
		{"unknown", func(t *testing.T, dev string) {
			writeAt(t, dev, 0, bytes.Repeat([]byte{0xa5, 0x5a, 0x01, 0x77}, 1<<18))
		}, ""},
		{"ext4", mkfsOn("mkfs.ext4", "-q", "-F"), "ext4 at byte 1080"},
		{"btrfs", mkfsOn("mkfs.btrfs", "-q", "-f"), "btrfs at byte 65600"},
		{"swap", mkfsOn("mkswap"), "swap at byte 4086"},
		{"gpt", func(t *testing.T, dev string) {
			pmbr := make([]byte, 1024)
			copy(pmbr[446:], []byte{0, 0, 2, 0, 0xee, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
			pmbr[510], pmbr[511] = 0x55, 0xaa
			copy(pmbr[512:], "EFI PART\x00\x00\x01\x00\x5c\x00\x00\x00")
			writeAt(t, dev, 0, pmbr)
		}, "gpt at byte 512"},
		{"dos", func(t *testing.T, dev string) {
			mbr := make([]byte, 512)
			copy(mbr[446:], []byte{0x80, 0, 0, 0, 0x83, 0, 0, 0, 0, 8, 0, 0, 0, 0, 1, 0})
			mbr[510], mbr[511] = 0x55, 0xaa
			writeAt(t, dev, 0, mbr)
		}, "dos at byte 510"},
		{"lvm", func(t *testing.T, dev string) {
			writeAt(t, dev, 512, []byte("LABELONE\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x20\x00\x00\x00LVM2 001"))
		}, "LVM2_member at byte 512"},
		{"md-1.2", func(t *testing.T, dev string) {
			writeAt(t, dev, 4096, []byte{0xfc, 0x4e, 0x2b, 0xa9, 1, 0, 0, 0})
		}, "linux_raid_member at byte 4096"},
		{"md-0.90", func(t *testing.T, dev string) {
			writeAt(t, dev, size-64<<10, []byte{0xfc, 0x4e, 0x2b, 0xa9, 0, 0, 0, 0})
		}, "linux_raid_member at byte 134152192"},
		{"luks2-secondary", func(t *testing.T, dev string) {
			writeAt(t, dev, 0x4000, []byte("SKUL\xba\xbe\x00\x02"))
		}, "crypto_LUKS at byte 16384"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev, _ := fixture.LoopDevice(t, size, nil)
			c.setup(t, dev)
			before := readAll(t, dev)
			tg, err := filetarget.Open(dev, 1<<20, filetarget.Options{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("device of %s refused: %v", c.name, err)
				}
				tg.Close(true)
				if c.name == "zeros" {
					tg, err := filetarget.Open(dev, 1<<20, filetarget.Options{AssumeZeroed: true})
					if err != nil {
						t.Fatalf("zeroed device with --assume-zeroed refused: %v", err)
					}
					tg.Close(true)
				}
				return
			}
			if err == nil {
				tg.Close(true)
			}
			if !errors.Is(err, filetarget.ErrTargetNotEmpty) || !errors.Is(err, restore.ErrTargetUnusable) ||
				!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dev) || !strings.Contains(err.Error(), "--force") {
				t.Fatalf("got %v, want ErrTargetNotEmpty naming %s and %q and --force", err, dev, c.want)
			}
			if !bytes.Equal(readAll(t, dev), before) {
				t.Fatal("refused device changed")
			}
			tg, err = filetarget.Open(dev, 1<<20, filetarget.Options{Force: true, AssumeZeroed: true})
			if err == nil {
				tg.Close(true)
			}
			if !errors.Is(err, filetarget.ErrTargetNotEmpty) || !strings.Contains(err.Error(), "--assume-zeroed") {
				t.Fatalf("--force --assume-zeroed: got %v, want ErrTargetNotEmpty naming --assume-zeroed", err)
			}
			tg, err = filetarget.Open(dev, 1<<20, filetarget.Options{Force: true})
			if err != nil {
				t.Fatalf("--force: %v", err)
			}
			tg.Close(true)
		})
	}
}

// readAll reads the whole device (or file) p.
func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
