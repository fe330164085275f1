package filetarget_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// sigImageSize is the size of the in-memory devices of
// TestProbeMoreSignatures: past VMFS's magic at 2 MiB.
const sigImageSize = 8 << 20

// put writes b at off of img.
func put(img []byte, off int, b []byte) { copy(img[off:], b) }

// TestProbeMoreSignatures: signatures wipefs erases beyond the common
// file systems are found, named as wipefs names them, at the offset of
// their magic: VMFS (and its volume member), Ceph BlueStore, Intel RST
// (isw) RAID metadata two sectors from the end, squashfs, HFS+, EROFS,
// Minix and cramfs; a weak magic whose super block fails libblkid's
// checks is not. Where wipefs is installed, it must say the same of each
// image. Before, none of them was found and such a device was overwritten
// without --force.
func TestProbeMoreSignatures(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	for _, c := range []struct {
		name string
		make func(img []byte)
		want string // "" for none
	}{
		{"vmfs", func(img []byte) { put(img, 2<<20, []byte("\x5e\xf1\xab\x2f")) }, "VMFS at byte 2097152"},
		{"vmfs-volume", func(img []byte) { put(img, 1<<20, []byte("\x0d\xd0\x01\xc0\x05\x00\x00\x00")) }, "VMFS_volume_member at byte 1048576"},
		{"bluestore", func(img []byte) { put(img, 0, []byte("bluestore block device\n\x02\x00\x00\x00")) }, "ceph_bluestore at byte 0"},
		{"isw", func(img []byte) { put(img, len(img)-1024, []byte("Intel Raid ISM Cfg Sig. 1.0.00")) }, "isw_raid_member at byte 8387584"},
		{"squashfs", func(img []byte) {
			put(img, 0, []byte("hsqs"))
			le.PutUint32(img[12:], 131072)
			le.PutUint16(img[22:], 17)
			le.PutUint16(img[28:], 4)
		}, "squashfs at byte 0"},
		{"hfsplus", func(img []byte) {
			put(img, 1024, []byte("H+\x00\x04"))
			be.PutUint32(img[1024+40:], 4096)
			be.PutUint32(img[1024+44:], 2048)
		}, "hfsplus at byte 1024"},
		{"hfsplus-no-block-size", func(img []byte) { put(img, 1024, []byte("H+\x00\x04")) }, ""},
		{"erofs", func(img []byte) {
			le.PutUint32(img[1024:], 0xE0F5E1E2)
			img[1024+12] = 12
		}, "erofs at byte 1024"},
		{"minix", func(img []byte) {
			sb := img[1024:]
			le.PutUint16(sb[0:], 64)   // inodes
			le.PutUint16(sb[2:], 8192) // zones
			le.PutUint16(sb[4:], 1)    // inode bitmap blocks
			le.PutUint16(sb[6:], 1)    // zone bitmap blocks
			le.PutUint16(sb[8:], 5)    // first data zone
			le.PutUint16(sb[0x10:], 0x138f)
		}, "minix at byte 1040"},
		{"minix-bitmaps-too-small", func(img []byte) {
			sb := img[1024:]
			le.PutUint16(sb[0:], 64)
			le.PutUint16(sb[2:], 65535)
			le.PutUint16(sb[4:], 1)
			le.PutUint16(sb[6:], 1)
			le.PutUint16(sb[8:], 5)
			le.PutUint16(sb[0x10:], 0x138f)
		}, ""},
		{"cramfs", func(img []byte) {
			le.PutUint32(img[0:], 0x28cd3d45)
			le.PutUint32(img[4:], 4096)
			put(img, 16, []byte("Compressed ROMFS"))
		}, "cramfs at byte 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := make([]byte, sigImageSize)
			c.make(img)
			found, err := filetarget.ProbeSignatures(bytes.NewReader(img), int64(len(img)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range found {
				got = append(got, s.String())
			}
			if strings.Join(got, ", ") != c.want {
				t.Errorf("found [%s]; want [%s]", strings.Join(got, ", "), c.want)
			}
			if w, ok := wipefsSays(t, img); ok && !sameSigs(w, found) {
				t.Errorf("wipefs -n finds %v; the probe %v", w, found)
			}
		})
	}
}

// wipefsSays writes img to a file and returns what wipefs -n finds in it
// ("type at byte N"); false where wipefs is not installed.
func wipefsSays(t *testing.T, img []byte) ([]string, bool) {
	t.Helper()
	if _, err := exec.LookPath("wipefs"); err != nil {
		return nil, false
	}
	p := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(p, img, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("wipefs", "-n", "-J", p).Output()
	if err != nil {
		t.Fatalf("wipefs: %v", err)
	}
	var r struct {
		Signatures []struct{ Type, Offset string }
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, true
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("wipefs output %q: %v", out, err)
	}
	var says []string
	for _, s := range r.Signatures {
		off, err := strconv.ParseInt(s.Offset, 0, 64)
		if err != nil {
			t.Fatalf("wipefs offset %q", s.Offset)
		}
		says = append(says, filetarget.Signature{Name: s.Type, Offset: off}.String())
	}
	return says, true
}

// sameSigs reports whether wipefs's findings w name the same signatures
// as found.
func sameSigs(w []string, found []filetarget.Signature) bool {
	var f []string
	for _, s := range found {
		f = append(f, s.String())
	}
	sort.Strings(w)
	sort.Strings(f)
	return strings.Join(w, "|") == strings.Join(f, "|")
}

// TestDeviceMoreSignaturesRefused: on a loop device, a Minix file system
// made by mkfs.minix and a VMFS magic 2 MiB in are refused without
// --force (ErrTargetNotEmpty), the device unchanged.
func TestDeviceMoreSignaturesRefused(t *testing.T) {
	fixture.SkipIfShort(t) // loop devices and mkfs: make test runs it
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dev string)
		want  string
	}{
		{"minix", mkfsOn("mkfs.minix"), "minix at byte 1040"},
		{"vmfs", func(t *testing.T, dev string) { writeAt(t, dev, 2<<20, []byte("\x5e\xf1\xab\x2f")) }, "VMFS at byte 2097152"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev, _ := fixture.LoopDevice(t, 16<<20, nil)
			c.setup(t, dev)
			before := readAll(t, dev)
			tg, err := filetarget.Open(dev, 1<<20, filetarget.Options{})
			if err == nil {
				tg.Close(true)
			}
			if !errors.Is(err, filetarget.ErrTargetNotEmpty) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrTargetNotEmpty naming %q", err, c.want)
			}
			if !bytes.Equal(readAll(t, dev), before) {
				t.Fatal("refused device changed")
			}
		})
	}
}
