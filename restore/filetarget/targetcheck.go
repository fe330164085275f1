package filetarget

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// imageMagic is a format signature at a byte offset of a file or device.
type imageMagic struct {
	off   int
	magic string
	name  string
}

// imageMagics are the signatures checked at the start of an existing
// target (qemu's block drivers and cryptsetup use the same ones).
var imageMagics = []imageMagic{
	{0, "QFI\xfb", "qcow2"},
	{0, "QED\x00", "QED"},
	{0, "KDMV", "VMDK"},
	{0, "# Disk DescriptorFile", "VMDK descriptor"},
	{0, "vhdxfile", "VHDX"},
	{0, "conectix", "VHD"},
	{0x40, "\x7f\x10\xda\xbe", "VDI"},
	{0, "LUKS\xba\xbe", "LUKS"},
}

// checkFormat reads the start (and for a regular file of size bytes, the
// VHD footer at the end) of f and refuses a known image container or LUKS
// volume with restore.ErrTargetFormat and a hint on what to do instead.
func checkFormat(f *os.File, user string, size int64, device bool) error {
	head := make([]byte, 512)
	n, err := f.ReadAt(head, 0)
	if n == 0 && err != nil {
		return nil // empty or unreadable: nothing to recognise
	}
	head = head[:n]
	found := ""
	for _, m := range imageMagics {
		if len(head) >= m.off+len(m.magic) && string(head[m.off:m.off+len(m.magic)]) == m.magic {
			found = m.name
			break
		}
	}
	if found == "" && !device && size >= 512 {
		foot := make([]byte, 8)
		if _, err := f.ReadAt(foot, size-512); err == nil && bytes.Equal(foot, []byte("conectix")) {
			found = "VHD"
		}
	}
	switch {
	case found == "":
		return nil
	case found == "LUKS":
		what := "remove the file first"
		if device {
			what = "clear the signature first (wipefs -a " + user + ")"
		}
		return fmt.Errorf("%s: %w: it starts with a LUKS header, and raw data written over it destroys the encrypted volume; "+
			"to restore into the volume, open it (cryptsetup open) and restore to /dev/mapper/NAME; if it is a plain disk whose guest uses LUKS, %s", user, restore.ErrTargetFormat, what)
	}
	replace := "remove " + user + " first"
	if device {
		replace = "clear its signature first (wipefs -a " + user + ")"
	}
	return fmt.Errorf("%s: %w: it is a %s image, and the raw disk written over it would destroy the container; "+
		"restore to a raw file and convert it, e.g. qemu-img convert -f raw -O qcow2 disk.raw %s (or %s to replace it with a raw image)",
		user, restore.ErrTargetFormat, found, user, replace)
}

// checkNotLoopBacked refuses a regular file that backs a loop device: it is
// attached (likely mounted) and writing under it corrupts what uses it.
func checkNotLoopBacked(st *unix.Stat_t, user string) error {
	devs, _ := filepath.Glob("/sys/block/loop*")
	for _, sys := range devs {
		dev := "/dev/" + filepath.Base(sys)
		if bf, err := os.ReadFile(filepath.Join(sys, "loop", "backing_file")); err != nil || len(bf) == 0 {
			continue // not attached
		}
		fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		info, err := unix.IoctlLoopGetStatus64(fd)
		unix.Close(fd)
		if err != nil {
			continue
		}
		if info.Inode == st.Ino && info.Device == uint64(st.Dev) {
			return fmt.Errorf("%s: %w (%s): detach it first (umount, losetup -d %s)", user, restore.ErrTargetInUse, dev, dev)
		}
	}
	return nil
}

// File systems that copy on write and may store data compressed
// (statfs f_type).
const (
	btrfsMagic    = 0x9123683E
	zfsMagic      = 0x2FC12FC1
	bcachefsMagic = 0xCA451A4E
)

// btrfsMaxCompressed is the most data btrfs puts in one compressed
// extent (128 KiB); such an extent takes at least one block on disk.
const btrfsMaxCompressed = 128 << 10

// checkSpace refuses an image whose data (dataBytes) cannot fit in the
// free space of the file system holding f, with restore.ErrNoSpace naming
// the bytes needed and available. reused is f's allocation and shared the
// part of it shared with snapshots or reflinked copies; overwrite says
// that f is an existing file whose data is written over.
//
// In place (ext4, XFS, btrfs NOCOW files) the allocation is available,
// less its shared bytes (overwriting those frees nothing). Where an
// overwrite copies on write (btrfs, bcachefs) the new data is allocated
// before the old is freed, so the whole data is needed beside the file's
// allocation. The partial output of a resumed restore (overwrite false)
// keeps what it holds either way. Where data may be stored compressed
// (btrfs compress mount or file attribute) only a lower bound is known:
// one block per 128 KiB of data, btrfs's largest compressed extent; an
// image is refused only if even that does not fit. ZFS, and bcachefs with
// compression, are not checked (how much data takes there cannot be told
// from here).
func checkSpace(f *os.File, user string, dataBytes, reused, shared int64, overwrite bool) error {
	var sf unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sf); err != nil {
		return nil // cannot tell: the reservation before the fetch still catches it
	}
	fsType := uint32(sf.Type)
	need, compressed := dataBytes, false
	switch fsType {
	case zfsMagic:
		return nil
	case bcachefsMagic:
		if mayCompress(f) {
			return nil
		}
	case btrfsMagic:
		if mayCompress(f) {
			need = (dataBytes + btrfsMaxCompressed - 1) / btrfsMaxCompressed * sf.Bsize
			compressed = true
		}
	}
	cow := overwrite && copyOnWrite(f, fsType)
	free := int64(sf.Bavail) * sf.Bsize
	claimable := reused - min(shared, reused)
	if cow {
		claimable = 0
	}
	if need <= free+claimable {
		return nil
	}
	msg := fmt.Sprintf("the image has %d bytes of data, the file system has %d bytes free", dataBytes, free)
	switch {
	case cow && compressed:
		msg += fmt.Sprintf(" and stores data compressed and copies on write (the existing file's %d bytes allocated are freed only after the new data is written): at least %d bytes needed (one block per 128 KiB of data, even if it all compressed), %d available",
			reused, need, free)
	case compressed:
		msg += fmt.Sprintf(" and stores data compressed: at least %d bytes needed (one block per 128 KiB of data, even if it all compressed), %d available", need, free+claimable)
	case shared > 0:
		msg += fmt.Sprintf(" and the existing file %d bytes allocated, %d of them shared with a snapshot or a reflinked copy (overwriting those frees nothing", reused, min(shared, reused))
		if cow {
			msg += "; the file system copies on write, so the rest is freed only after the new data is written"
		}
		msg += fmt.Sprintf("): %d bytes needed, %d available", need, free+claimable)
	case cow && reused > 0:
		msg += fmt.Sprintf(" and copies on write: the existing file's %d bytes allocated are freed only after the new data is written (unless the file is set NOCOW, chattr +C): %d bytes needed, %d available",
			reused, need, free)
	case reused > 0:
		msg += fmt.Sprintf(" and the existing file %d bytes allocated: %d bytes needed, %d available", reused, need, free+claimable)
	}
	// Otherwise need is dataBytes and free all there is: said once above.
	return fmt.Errorf("%s: %w: %s; nothing was written: %w", user, restore.ErrNoSpace, msg, unix.ENOSPC)
}

// lockLoopBacking takes the lock of a loop device target's backing file
// (found by LOOP_GET_STATUS64 and /sys/block/loopN/loop/backing_file, and
// checked to be that inode) for the run, as a restore into the file itself
// would: a run writing the file makes this one fail with restore.ErrTargetBusy. A
// device that is not a loop device, or whose backing file cannot be
// opened, is left alone.
func (t *Target) lockLoopBacking() error {
	info, err := unix.IoctlLoopGetStatus64(int(t.buffered.Fd()))
	if err != nil {
		return nil // not a loop device (or not attached)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(t.buffered.Fd()), &st); err != nil {
		return nil
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d/loop/backing_file", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	name, err := os.ReadFile(sys)
	if err != nil {
		return nil
	}
	p := strings.TrimSuffix(string(name), "\n")
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	var bst unix.Stat_t
	if unix.Fstat(int(f.Fd()), &bst) != nil || bst.Ino != info.Inode || uint64(bst.Dev) != info.Device {
		f.Close()
		return nil
	}
	if err := lockFile(f, t.path); err != nil {
		f.Close()
		return fmt.Errorf("%w (through its backing file %s)", err, p)
	}
	t.backing = f
	return nil
}

// checkNoRecordLocks refuses a target on which another open file holds a
// byte-range lock (OFD or POSIX, fcntl): QEMU and qemu-nbd lock the images
// they have open that way, and writing under a running guest destroys its
// disk. F_OFD_GETLK for a write lock over the whole file finds any such
// lock of another open file description.
func checkNoRecordLocks(f *os.File, user string) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK {
		return nil
	}
	who := "another program (QEMU, qemu-nbd?)"
	if lk.Pid > 0 {
		who = fmt.Sprintf("PID %d", lk.Pid)
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", lk.Pid)); err == nil {
			who += " (" + strings.TrimSpace(string(comm)) + ")"
		}
	}
	kind := "read"
	if lk.Type == unix.F_WRLCK {
		kind = "write"
	}
	return fmt.Errorf("%s: %w: %s holds a %s lock on bytes from %d (fcntl/OFD, as QEMU takes on the images it runs): stop it first",
		user, restore.ErrTargetInUse, who, kind, lk.Start)
}
