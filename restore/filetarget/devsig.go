package filetarget

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pbsdirect/pbsdirect/restore"
)

// ErrTargetNotEmpty is wrapped by Open errors for a block device
// that holds a file system, a partition table, an LVM physical volume, an
// MD RAID member or another known signature, when Options.Force was
// not given (or AssumeZeroed was: such a device does not read as zeros).
// It is a usage mistake (exit 2): the device is left as it was.
var ErrTargetNotEmpty = errors.New("target block device is not empty")

// Signature is a known on-disk structure found on a device: its name (as
// wipefs and blkid say it: "ext4", "gpt", "LVM2_member") and the byte
// offset of its magic.
type Signature struct {
	Name   string
	Offset int64
}

// String says the signature and where, "ext4 at byte 1080".
func (s Signature) String() string { return fmt.Sprintf("%s at byte %d", s.Name, s.Offset) }

// Byte counts probed: the head holds every superblock below but VMFS's
// (ZFS's first label ends at 256 KiB), the tail MD 0.90/1.0 superblocks,
// Intel RST metadata and the backup GPT header.
const (
	probeHead = 256 << 10
	probeTail = 128 << 10
)

// headMagic is a signature at a fixed offset of a device.
type headMagic struct {
	off   int
	magic string
	name  string
}

// headMagics are the fixed-offset signatures libblkid's probes use for
// the same structures (one magic each; a few weak ones get an extra check
// in ProbeSignatures).
var headMagics = []headMagic{
	{0x438, "\x53\xef", "ext4"}, // ext2/3/4 s_magic, checked further below
	{0, "XFSB", "xfs"},
	{0x10040, "_BHRfS_M", "btrfs"},
	{0x36, "FAT12   ", "vfat"},
	{0x36, "FAT16   ", "vfat"},
	{0x52, "FAT32   ", "vfat"},
	{3, "NTFS    ", "ntfs"},
	{3, "EXFAT   ", "exfat"},
	{0x400, "\x10\x20\xf5\xf2", "f2fs"},
	{0x10034, "ReIsEr2Fs", "reiserfs"},
	{0x10034, "ReIsEr3Fs", "reiserfs"},
	{0x8000, "JFS1", "jfs"},
	{0x8001, "CD001", "iso9660"},
	{0x1018, "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81", "bcache"},
	{0, "LUKS\xba\xbe", "crypto_LUKS"},
	{0x4000, "SKUL\xba\xbe", "crypto_LUKS"},           // LUKS2 secondary header
	{0, "\xfc\x4e\x2b\xa9", "linux_raid_member"},      // MD 1.1
	{0x1000, "\xfc\x4e\x2b\xa9", "linux_raid_member"}, // MD 1.2
	{512, "EFI PART", "gpt"},
	{4096, "EFI PART", "gpt"},
	{4086, "SWAPSPACE2", "swap"},
	{4086, "SWAP-SPACE", "swap"},
	{8182, "SWAPSPACE2", "swap"},
	{16374, "SWAPSPACE2", "swap"},
	{65526, "SWAPSPACE2", "swap"},
	{0, "bluestore block device", "ceph_bluestore"},
	{0, "\x45\x3d\xcd\x28", "cramfs"}, // 0x28cd3d45, either byte order
	{0, "\x28\xcd\x3d\x45", "cramfs"},
	{0, "hsqs", "squashfs"},  // checked further below (version)
	{0, "hsqs", "squashfs3"}, // version 3 or older, little-endian
	{0, "sqsh", "squashfs3"}, // big-endian squashfs 3
	{0x400, "H+", "hfsplus"}, // checked further below (block size)
	{0x400, "HX", "hfsplus"},
	{0x400, "\xe2\xe1\xf5\xe0", "erofs"},                // 0xE0F5E1E2
	{1 << 20, "\x0d\xd0\x01\xc0", "VMFS_volume_member"}, // past the head: read on its own
	{2 << 20, "\x5e\xf1\xab\x2f", "VMFS"},
}

// Minix super block magics (at 1024+0x10, v3 at 1024+0x18), as libblkid
// knows them, with the version each says.
var minixMagics = map[uint16]int{0x137f: 1, 0x138f: 1, 0x2468: 2, 0x2478: 2}

// iswSignature starts the Intel Matrix Storage (RST) metadata, two
// sectors before the end of the disk.
const iswSignature = "Intel Raid ISM Cfg Sig. "

// ProbeSignatures reads the first 256 KiB and the last 128 KiB of the
// device f of size bytes (and the few bytes of VMFS's magics, 1 and 2 MiB
// in) and returns the file systems, partition tables,
// volume-manager, RAID and encryption signatures found there (the magics
// wipefs would erase), in order of offset. A device that reads as zeros,
// or holds nothing known, yields none. Read errors are returned.
func ProbeSignatures(f io.ReaderAt, size int64) ([]Signature, error) {
	head := make([]byte, min(size, probeHead))
	if n, err := f.ReadAt(head, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(head)) {
		return nil, err
	}
	var found []Signature
	add := func(name string, off int64) {
		for _, s := range found {
			if s.Name == name {
				return // one per structure is enough to say it
			}
		}
		found = append(found, Signature{name, off})
	}
	at := func(b []byte, off int, magic string) bool {
		return off >= 0 && off+len(magic) <= len(b) && string(b[off:off+len(magic)]) == magic
	}
	for _, m := range headMagics {
		if m.off+len(m.magic) > len(head) {
			// Past the head (VMFS): read on its own.
			b := make([]byte, len(m.magic))
			if int64(m.off+len(b)) > size {
				continue
			}
			if _, err := f.ReadAt(b, int64(m.off)); err != nil {
				return nil, err
			}
			if string(b) == m.magic {
				add(m.name, int64(m.off))
			}
			continue
		}
		if !at(head, m.off, m.magic) || !plausible(head, m.name) {
			continue
		}
		add(m.name, int64(m.off))
	}
	if off, ok := minixAt(head); ok {
		add("minix", off)
	}
	// LVM2: "LABELONE" in one of the first four sectors, "LVM2 001" at +24.
	for s := 0; s < 4; s++ {
		if at(head, s*512, "LABELONE") && at(head, s*512+24, "LVM2 001") {
			add("LVM2_member", int64(s*512))
		}
	}
	// ZFS: an uberblock magic (either byte order) in the first label's
	// uberblock ring, 128 KiB into the device.
	for off := 128 << 10; off+8 <= len(head); off += 1 << 10 {
		if m := binary.LittleEndian.Uint64(head[off:]); m == 0x00bab10c || m == 0x0cb1ba0000000000 {
			add("zfs_member", int64(off))
			break
		}
	}
	// An MBR partition table: the boot signature, no file system boot
	// sector, valid boot flags and at least one partition.
	if at(head, 510, "\x55\xaa") && !hasAny(found, "vfat", "ntfs", "exfat") {
		ok, any, protective := true, false, false
		for i := range 4 {
			e := head[446+16*i : 446+16*i+16]
			if e[0] != 0 && e[0] != 0x80 {
				ok = false
			}
			if e[4] != 0 {
				any = true
			}
			if e[4] == 0xee {
				protective = true
			}
		}
		switch {
		case ok && protective:
			add("PMBR", 510) // the MBR guarding a GPT
		case ok && any:
			add("dos", 510)
		}
	}
	if size > probeHead {
		start := max(size-probeTail, probeHead)
		tail := make([]byte, size-start)
		if n, err := f.ReadAt(tail, start); err != nil && !(errors.Is(err, io.EOF) && n == len(tail)) {
			return nil, err
		}
		rel := func(off int64) int { return int(off - start) }
		// MD 0.90 (64 KiB aligned, 64 KiB from the end) and 1.0 (8 KiB
		// from the end, 4 KiB aligned).
		for _, off := range []int64{size&^(64<<10-1) - 64<<10, (size - 8<<10) &^ (4<<10 - 1)} {
			if at(tail, rel(off), "\xfc\x4e\x2b\xa9") {
				add("linux_raid_member", off)
			}
		}
		for _, off := range []int64{size - 512, size - 4096} {
			if at(tail, rel(off), "EFI PART") {
				add("gpt", off) // the backup header
			}
		}
		if off := (size/512 - 2) * 512; at(tail, rel(off), iswSignature) {
			add("isw_raid_member", off)
		}
	}
	return found, nil
}

// plausible checks what follows a weak magic found in head for the
// structure name, as libblkid does before it reports it: ext2/3/4 a sane
// block size (s_log_block_size ≤ 6: 1 KiB to 64 KiB) and inodes; squashfs
// its major version (4 and later "squashfs", earlier ones "squashfs3"); HFS+ a block size of
// at least 512 bytes.
func plausible(head []byte, name string) bool {
	le, be := binary.LittleEndian, binary.BigEndian
	switch name {
	case "ext4":
		return le.Uint32(head[0x418:]) <= 6 && le.Uint32(head[0x400:]) != 0
	case "squashfs":
		return len(head) >= 30 && le.Uint16(head[28:]) >= 4
	case "squashfs3":
		return len(head) >= 30 && (head[0] == 's' || le.Uint16(head[28:]) <= 3)
	case "hfsplus":
		return len(head) >= 0x400+44 && be.Uint32(head[0x400+40:]) >= 512
	}
	return true
}

// minixAt finds a Minix file system's super block at 1024 bytes into head
// (v1 and v2 in either byte order, v3), with libblkid's checks: bitmaps
// large enough for the inodes and zones, and no ext2/3/4 magic where
// parts of its super block could look like one. It returns the magic's
// offset.
func minixAt(head []byte) (int64, bool) {
	const sb, block = 1024, 1024
	if len(head) < 0x43a {
		return 0, false
	}
	b := head[sb:]
	if head[0x438] == 0x53 && head[0x439] == 0xef {
		return 0, false
	}
	if binary.LittleEndian.Uint16(b[0x18:]) == 0x4d5a { // v3, little-endian only
		if binary.LittleEndian.Uint16(b[6:]) != 0 && binary.LittleEndian.Uint16(b[8:]) != 0 {
			return sb + 0x18, true
		}
		return 0, false
	}
	for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		v, ok := minixMagics[o.Uint16(b[0x10:])]
		if !ok {
			continue
		}
		ninodes, imaps, zmaps, firstz := int(o.Uint16(b[0:])), int(o.Uint16(b[4:])), int(o.Uint16(b[6:])), int(o.Uint16(b[8:]))
		zones := int(o.Uint16(b[2:]))
		if v == 2 {
			zones = int(o.Uint32(b[20:]))
		}
		if imaps == 0 || zmaps == 0 || imaps*block*8 < ninodes+1 || zmaps*block*8 < zones-firstz+1 {
			return 0, false
		}
		return sb + 0x10, true
	}
	return 0, false
}

// hasAny reports whether found names one of names.
func hasAny(found []Signature, names ...string) bool {
	for _, s := range found {
		for _, n := range names {
			if s.Name == n {
				return true
			}
		}
	}
	return false
}

// checkDeviceEmpty refuses a block device that holds known signatures
// (ProbeSignatures) unless force; with assumeZeroed it refuses them even
// with force, since such a device does not read as zeros. The error wraps
// ErrTargetNotEmpty and is a usage mistake (restore.ErrTargetUnusable): it names
// what was found and at which offset. An unreadable device is left to the
// restore's own writes to report.
func checkDeviceEmpty(f *os.File, user string, size int64, force, assumeZeroed bool) error {
	if force && !assumeZeroed {
		return nil
	}
	found, err := ProbeSignatures(f, size)
	if err != nil || len(found) == 0 {
		return nil
	}
	var words []string
	for _, s := range found {
		words = append(words, s.String())
	}
	what := strings.Join(words, ", ")
	if assumeZeroed {
		return restore.Unusable(fmt.Errorf("%s: %w: --assume-zeroed, but it holds %s: it does not read as zeros; nothing was written (drop --assume-zeroed, so zero ranges are zeroed)",
			user, ErrTargetNotEmpty, what))
	}
	return restore.Unusable(fmt.Errorf("%s: %w: it holds %s; nothing was written: give --force to overwrite it (check it is the right device first: lsblk -f %s)",
		user, ErrTargetNotEmpty, what, user))
}
