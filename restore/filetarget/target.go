package filetarget

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// Options select how Open treats an existing target.
type Options struct {
	// Force allows overwriting an existing regular file (zero ranges are
	// then punched, or written, so the file matches the image exactly) and
	// a block device that holds a file system, partition table, LVM, RAID
	// or other known signature (ErrTargetNotEmpty without it).
	Force bool
	// AssumeZeroed tells that a block device already reads as zeros: zero
	// ranges are skipped instead of zeroed. A device holding a known
	// signature is refused with it, Force or not (ErrTargetNotEmpty).
	AssumeZeroed bool
	// NoDirect disables O_DIRECT.
	NoDirect bool
	// FollowSymlinks writes through a symbolic link at the target's path
	// (to the file it names); without it such a link is refused
	// (restore.ErrTargetSymlink). Links to block devices are always followed.
	FollowSymlinks bool
	// DataBytes is how many bytes of the image are data (not zero chunks),
	// for the free-space check before the work; 0 skips the check.
	DataBytes int64
	// Reserve yields the image's data ranges (Plan.DataRanges). An
	// existing regular file (Force) on a file system where Allocate
	// reserves space gets them reserved before it is truncated or punched:
	// a file system that fills up meanwhile (ENOSPC) then fails Open
	// with the file exactly as it was. nil reserves nothing here (Allocate
	// still does, later).
	Reserve iter.Seq[restore.Range]
	// StoreDir is the datastore directory being read, for a local store
	// ("" for a bucket): a target inside it, or a hard link of one of its
	// index, blob or chunk files, is refused (restore.ErrTargetInStore).
	StoreDir string
	// Resume continues an interrupted restore of a new file: its partial
	// output must be there, of the image's size, and is kept as it is
	// (not emptied). Existing files and devices are written in place
	// either way.
	Resume bool
	// Note, when set, receives notes on the target (a block device larger
	// than the image: the bytes past it are left as they were).
	Note func(msg string)
	// Locked, when set, is called once the target is locked and checked,
	// before anything in it changes (a new file's leftover partial output
	// is emptied only after it): the place to discard an earlier restore's
	// resume journal, which would no longer tell the truth. Its error
	// stops Open.
	Locked func() error
}

// Target writes to a regular file or a block device with positioned
// writes, through O_DIRECT where the filesystem allows it and aligned
// offsets and lengths permit; other writes go through a buffered descriptor.
// It holds an exclusive lock on the target from Open to Close.
type Target struct {
	path      string   // the user's path, for messages
	place     *place   // directory, names and partial output of a file target; nil for a device
	buffered  *os.File // also holds the lock
	backing   *os.File // a loop device's backing file, locked; nil otherwise
	direct    *os.File // nil when O_DIRECT is unavailable
	directOK  atomic.Bool
	device    bool
	created   bool        // a new file, written as the place's partial output
	keep      bool        // keep the partial output on Close (a journaled restore to resume)
	committed bool        // the partial output was renamed into place
	zeroNeeds bool        // Zero must act (existing file, or device not assumed zeroed)
	reserve   bool        // Allocate reserves space (a regular file on ext4 or XFS)
	modified  atomic.Bool // an existing target (file or device) was changed
	noPunch   atomic.Bool // the device refused a zeroing discard: use BLKZEROOUT
	size      int64
}

// Open opens path for an image of size bytes and locks it for the
// whole run. Everything that can be checked before the work is checked
// here, and a failure leaves an existing target exactly as it was (size,
// content, allocation): the symlink policy (restore.ErrTargetSymlink), the target's
// directory, the lock (restore.ErrTargetBusy, naming the holder's PID), an existing
// file's format (restore.ErrTargetFormat), a file backing a loop device
// (restore.ErrTargetInUse), the free space for opts.DataBytes (restore.ErrNoSpace), a
// device's size and, without opts.Force, the signatures a device holds
// (ErrTargetNotEmpty).
//
// A missing path is created as a sparse file under a partial name beside
// it (relative to the directory's descriptor) and renamed into place by
// Commit or Close; an existing regular file needs opts.Force and is then
// truncated to size and written in place; a block device must be at least
// size bytes and is opened exclusively (refused while mounted or held).
// Errors name path, never the partial name.
func Open(path string, size int64, opts Options) (*Target, error) {
	p, st, err := resolveTarget(path, opts.FollowSymlinks)
	if err != nil {
		return nil, err
	}
	t := &Target{path: path, size: size}
	switch {
	case st != nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0:
		return t.openDevice(p, opts)
	case st != nil && st.Mode().IsRegular():
		if !opts.Force {
			return nil, fmt.Errorf("%s: %w", path, restore.ErrTargetExists)
		}
	case st != nil:
		return nil, restore.Unusable(fmt.Errorf("%s: not a regular file or block device", path))
	default:
		t.created = true
	}
	pl, err := openPlace(path, p)
	if err != nil {
		return nil, err
	}
	t.place = pl
	// A refused resume keeps the partial output it was to continue.
	t.keep = opts.Resume
	if err := checkNotInStore(opts.StoreDir, pl.dir, nil, path); err != nil {
		t.release()
		return nil, err
	}
	if err := t.openFile(opts); err != nil {
		t.release()
		return nil, err
	}
	t.keep = false
	return t, nil
}

// openFile opens and checks a regular file target: the partial output of a
// new one, or the existing file.
func (t *Target) openFile(opts Options) error {
	pl := t.place
	var reused int64
	if t.created {
		f, err := pl.createPartial(true)
		if err != nil {
			return err
		}
		t.buffered = f
		if opts.Resume {
			var st unix.Stat_t
			if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Size != t.size {
				return fmt.Errorf("%s: nothing to resume: the partial output of an interrupted restore is not there (or not of the image's size)", t.path)
			}
			// What the interrupted restore wrote is kept, and counts as
			// space already held; its zero ranges may hold anything, so
			// they are made zero as in an existing file.
			reused = st.Blocks * 512
			t.zeroNeeds = true
		}
		// Locked: a file that appeared at the name meanwhile is not ours.
		if there, err := pl.lstatName(); err != nil {
			return err
		} else if there != nil {
			return fmt.Errorf("%s: %w: it was created by another program meanwhile", t.path, restore.ErrTargetExists)
		}
		if opts.Locked != nil {
			if err := opts.Locked(); err != nil {
				t.keep = true // an earlier restore's partial output: not ours to remove
				return err
			}
		}
		if !opts.Resume {
			if err := f.Truncate(0); err != nil {
				return fmt.Errorf("%s: %w", t.path, causeOf(err))
			}
		}
	} else {
		fd, err := unix.Openat(int(pl.dir.Fd()), pl.name, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", t.path, err)
		}
		t.buffered = os.NewFile(uintptr(fd), t.path)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s: %w", t.path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return restore.Unusable(fmt.Errorf("%s: not a regular file or block device", t.path))
		}
		if err := lockFile(t.buffered, t.path); err != nil {
			return err
		}
		if err := checkNotInStore(opts.StoreDir, pl.dir, t.buffered, t.path); err != nil {
			return err
		}
		if err := checkNoRecordLocks(t.buffered, t.path); err != nil {
			return err
		}
		if err := checkNotLoopBacked(&st, t.path); err != nil {
			return err
		}
		if err := checkFormat(t.buffered, t.path, st.Size, false); err != nil {
			return err
		}
		reused = st.Blocks * 512
		t.zeroNeeds = true
		if opts.Locked != nil {
			if err := opts.Locked(); err != nil {
				return err
			}
		}
	}
	if opts.DataBytes > 0 {
		var shared int64
		if !t.created {
			// Extents shared with a snapshot or a reflinked copy stay
			// allocated when overwritten.
			var err error
			if shared, err = SharedBytes(t.buffered); err != nil {
				return fmt.Errorf("%s: FIEMAP: %w; nothing was written", t.path, err)
			}
		}
		if err := checkSpace(t.buffered, t.path, opts.DataBytes, reused, shared, !t.created); err != nil {
			return err
		}
	}
	t.reserve = reservesInPlace(t.buffered)
	if !t.created && t.reserve && opts.Reserve != nil {
		if err := t.reserveFirst(opts.Reserve, reused); err != nil {
			return err
		}
	}
	// Checks done: from here on an existing file is changed.
	t.modified.Store(!t.created)
	if err := t.buffered.Truncate(t.size); err != nil {
		return fmt.Errorf("%s: truncate to %d bytes: %w", t.path, t.size, causeOf(err))
	}
	t.openDirect(opts)
	return nil
}

// reserveFirst reserves the data ranges of an existing file before
// anything else touches it: fallocate(KEEP_SIZE) changes neither its size
// nor its content (reserved holes read as zeros, as they did). On failure
// the reservation is undone — the old holes punched again, and the space
// reserved past the old end freed by truncating to the old size — so the
// file keeps its size, content and allocation; ENOSPC/EDQUOT are returned
// as restore.ErrNoSpace. Once reserved, Allocate has nothing left to do.
func (t *Target) reserveFirst(ranges iter.Seq[restore.Range], allocated int64) error {
	fd := int(t.buffered.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", t.path, err)
	}
	holes := holesOf(fd, st.Size)
	var err error
	for r := range ranges {
		if err = fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, int64(r.Offset), int64(r.Length)); err != nil {
			break
		}
	}
	switch {
	case err == nil:
		t.reserve = false
		return nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return nil
	}
	for _, h := range holes {
		fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, h[0], h[1]-h[0])
	}
	// ext4 and XFS free blocks reserved past the end on a truncate, even to
	// the same size.
	unix.Ftruncate(fd, st.Size)
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("%s: %w: the file system filled up while reserving the image's %d bytes of data (beyond the existing file's %d bytes); nothing was written, the file is as it was: %w",
			t.path, restore.ErrNoSpace, t.size, allocated, err)
	}
	return fmt.Errorf("%s: reserve space: %w; nothing was written", t.path, err)
}

// holesOf lists the holes [start, end) of the file fd within its first
// size bytes (SEEK_DATA/SEEK_HOLE; none when the file system cannot tell).
func holesOf(fd int, size int64) [][2]int64 {
	var holes [][2]int64
	for pos := int64(0); pos < size; {
		data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, unix.ENXIO) {
				holes = append(holes, [2]int64{pos, size})
			}
			break
		}
		if data > pos {
			holes = append(holes, [2]int64{pos, min(data, size)})
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			break
		}
		pos = hole
	}
	return holes
}

// openDevice opens a block device exclusively, locks it and checks its
// size and format.
func (t *Target) openDevice(p string, opts Options) (*Target, error) {
	t.device = true
	t.zeroNeeds = !opts.AssumeZeroed
	// Exclusive open: refused (EBUSY) while it is mounted or in use.
	f, err := os.OpenFile(p, os.O_RDWR|os.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			who := "mounted, or held by another program"
			if g, gerr := os.Open(p); gerr == nil {
				if pid := lockHolder(g); pid > 0 {
					who = pidWords(pid)
				}
				g.Close()
			}
			return nil, fmt.Errorf("%s: %w: block device is busy (%s): %w", t.path, restore.ErrTargetBusy, who, unix.EBUSY)
		}
		return nil, fmt.Errorf("%s: %w", t.path, causeOf(err))
	}
	t.buffered = f
	if err := lockFile(f, t.path); err != nil {
		t.release()
		return nil, err
	}
	if err := checkNoRecordLocks(f, t.path); err != nil {
		t.release()
		return nil, err
	}
	// A loop device's backing file is locked too: a restore into the file
	// and one into the device over it must not run at once.
	if err := t.lockLoopBacking(); err != nil {
		t.release()
		return nil, err
	}
	// A read-only device (losetup -r, a write-protected disk) opens for
	// writing but refuses every write (EPERM): found here, before the work.
	if ro, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKROGET); err == nil && ro != 0 {
		t.release()
		return nil, fmt.Errorf("%s: block device is read-only (BLKROGET; e.g. losetup -r, blockdev --setro); nothing was written: %w", t.path, unix.EROFS)
	}
	devSize, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		t.release()
		return nil, fmt.Errorf("%s: block device size: %w", t.path, err)
	}
	if int64(devSize) < t.size {
		t.release()
		return nil, restore.Unusable(fmt.Errorf("%s: block device has %d bytes, image needs %d", t.path, devSize, t.size))
	}
	if err := checkFormat(f, t.path, int64(devSize), true); err != nil {
		t.release()
		return nil, err
	}
	// A file system, partition table, LVM or RAID signature: refused
	// without --force, as mkfs and wipefs do (a resume continues what
	// this restore wrote there).
	if !opts.Resume {
		if err := checkDeviceEmpty(f, t.path, int64(devSize), opts.Force, opts.AssumeZeroed); err != nil {
			t.release()
			return nil, err
		}
	}
	if opts.Locked != nil {
		if err := opts.Locked(); err != nil {
			t.release()
			return nil, err
		}
	}
	// Said only once the device is accepted: not before a refusal.
	if extra := int64(devSize) - t.size; extra > 0 && opts.Note != nil {
		opts.Note(fmt.Sprintf("%s: the block device is %d bytes larger than the image (%d bytes against %d): the %d bytes past the image are left as they were", t.path, extra, devSize, t.size, extra))
	}
	t.openDirect(opts)
	return t, nil
}

// openDirect opens the O_DIRECT descriptor on the same file as buffered:
// through /proc/self/fd, never by the target's path again.
func (t *Target) openDirect(opts Options) {
	if opts.NoDirect {
		return
	}
	self := fmt.Sprintf("/proc/self/fd/%d", t.buffered.Fd())
	if d, err := os.OpenFile(self, os.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0); err == nil {
		var a, b unix.Stat_t
		if unix.Fstat(int(d.Fd()), &a) == nil && unix.Fstat(int(t.buffered.Fd()), &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			t.direct = d
			t.directOK.Store(true)
			return
		}
		d.Close()
	}
}

// release closes every descriptor, removing an uncommitted partial output
// first (while the lock is still held).
func (t *Target) release() error {
	if t.created && !t.committed && !t.keep && t.place != nil && t.buffered != nil {
		t.place.removePartial()
	}
	var first error
	for _, f := range []*os.File{t.direct, t.buffered, t.backing} {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	t.direct, t.buffered, t.backing = nil, nil, nil
	if t.place != nil {
		t.place.close()
	}
	return first
}

// KeepPartial makes Close keep the partial output of a new file that was
// not completed, under its hidden name, for a resume (its journal records
// what is durable in it).
func (t *Target) KeepPartial() { t.keep = true }

// PartialPath returns the path of the partial output a new file target
// is written as ("" for other targets).
func (t *Target) PartialPath() string {
	if !t.created || t.place == nil {
		return ""
	}
	return filepath.Join(t.place.dirName(), t.place.partial)
}

// Direct reports whether O_DIRECT writes are in use.
func (t *Target) Direct() bool { return t.directOK.Load() }

// File returns the target's open descriptor (nil after Close), for a
// read-back of the very file written (ReadBackFile).
func (t *Target) File() *os.File { return t.buffered }

// Created reports whether Open created the target file.
func (t *Target) Created() bool { return t.created }

// Partial reports whether an existing target (a file written with Force,
// or a block device) was changed: after a failed restore it then holds a
// partial image, not what it held before.
func (t *Target) Partial() bool { return !t.created && t.modified.Load() }

// ZeroHandling says what Zero does to zero ranges on this target: "holes"
// (a new sparse file), "punched" (an existing file), "zeroed" (a block
// device: a zeroing discard where the device guarantees zeros, BLKZEROOUT
// or written zeros otherwise) or "skipped" (--assume-zeroed).
func (t *Target) ZeroHandling() string {
	switch {
	case t.device && !t.zeroNeeds:
		return "skipped"
	case t.device:
		return "zeroed"
	case t.created:
		return "holes"
	}
	return "punched"
}

// WriteAt writes p at off: through O_DIRECT when off and len(p) are
// restore.Alignment multiples, buffered otherwise. An O_DIRECT write the filesystem
// refuses (EINVAL) switches the target to buffered writes for good.
func (t *Target) WriteAt(p []byte, off int64) error {
	if t.directOK.Load() && off%restore.Alignment == 0 && len(p)%restore.Alignment == 0 {
		_, err := t.direct.WriteAt(p, off)
		if err == nil {
			t.modified.Store(true)
			return nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%s: write %d bytes at offset %d: %w", t.path, len(p), off, causeOf(err))
		}
		t.directOK.Store(false)
	}
	if n, err := t.buffered.WriteAt(p, off); err != nil {
		if n > 0 {
			t.modified.Store(true)
		}
		return fmt.Errorf("%s: write %d bytes at offset %d: %w", t.path, len(p), off, causeOf(err))
	}
	t.modified.Store(true)
	return nil
}

// Zero makes [off, off+length) read as zeros where that is needed: holes are
// punched in an existing file. On a block device the cheapest operation
// that guarantees zeros is used: fallocate(PUNCH_HOLE|KEEP_SIZE), which the
// kernel turns into a write-zeroes request that may unmap (a thin volume or
// a loop device over a sparse file stays thin) and which fails rather than
// leaving non-zero data; where the device cannot do that, BLKZEROOUT. If
// those are unsupported, zeros are written.
func (t *Target) Zero(off, length int64) error {
	if !t.zeroNeeds || length <= 0 {
		return nil
	}
	// Changed unless every way of zeroing fails (a device refusing
	// writes): a failed zeroing may still have cleared part of the range.
	t.modified.Store(true)
	fd := int(t.buffered.Fd())
	if t.device {
		if !t.noPunch.Load() {
			err := fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length)
			if err == nil {
				return nil
			}
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
				t.noPunch.Store(true) // no zeroing unmap on this device
			}
		}
		rng := [2]uint64{uint64(off), uint64(length)}
		if blkZeroOut(fd, &rng) == nil {
			return nil
		}
	} else if fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length) == nil {
		return nil
	}
	return t.writeZeros(off, length)
}

// fallocate is unix.Fallocate retried on EINTR.
func fallocate(fd int, mode uint32, off, length int64) error {
	for {
		err := unix.Fallocate(fd, mode, off, length)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Allocate reserves [off, off+length) of a regular file on ext4 or XFS
// with fallocate (mode 0: allocated, reading as zeros, size unchanged).
// Elsewhere it does nothing: a block device has its storage already; on
// copy-on-write file systems a reservation would not make writes
// overwrites, and it would cost space: btrfs writes reserved ranges
// uncompressed, and ZFS only checks for the full uncompressed size free, so
// an image that fits compressed would be refused. A file system without
// fallocate (EOPNOTSUPP) is written without a reservation. ENOSPC and other
// failures are returned, naming the file and range.
func (t *Target) Allocate(off, length int64) error {
	if !t.reserve || length <= 0 {
		return nil
	}
	t.modified.Store(true)
	err := fallocate(int(t.buffered.Fd()), 0, off, length)
	switch {
	case err == nil, errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return nil
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return fmt.Errorf("%s: no space for the image's data at [%d,%d): %w", t.path, off, off+length, err)
	}
	return fmt.Errorf("%s: reserve [%d,%d): %w", t.path, off, off+length, err)
}

// File system magic numbers (statfs f_type) where reserving space first
// pays: writes into reserved space are in-place overwrites, which run
// concurrently under O_DIRECT.
const (
	ext4Magic = 0xEF53 // ext2, ext3 and ext4
	xfsMagic  = 0x58465342
)

// reservesInPlace reports whether f lives on a file system where Allocate
// reserves space (ext4, XFS).
func reservesInPlace(f *os.File) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	return st.Type == ext4Magic || st.Type == xfsMagic
}

func (t *Target) writeZeros(off, length int64) error {
	zeros := make([]byte, min(length, 1<<20))
	for length > 0 {
		n := min(length, int64(len(zeros)))
		if _, err := t.buffered.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("%s: write zeros at offset %d: %w", t.path, off, causeOf(err))
		}
		off += n
		length -= n
	}
	return nil
}

// Sync flushes both descriptors with fdatasync.
func (t *Target) Sync() error {
	for _, f := range []*os.File{t.buffered, t.direct} {
		if f == nil {
			continue
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("%s: fdatasync: %w", t.path, err)
		}
	}
	return nil
}

// Commit finishes a successful restore and keeps the target open and
// locked (for a read-back): a new file, written under its partial name, is
// synced and renamed to the target's name (never replacing a file that
// appeared there meanwhile: restore.ErrTargetExists), and the directory is synced.
// Other targets are synced. Calling it again does nothing.
func (t *Target) Commit() error {
	if t.committed || t.buffered == nil {
		return nil
	}
	if err := t.Sync(); err != nil {
		return err
	}
	if t.created {
		if err := t.place.commit(false); err != nil {
			return err
		}
	}
	t.committed = true
	return nil
}

// Remove removes a file that Open created, after Commit, if its name
// still holds it (drill --remove). It does not close the target.
func (t *Target) Remove() error {
	if !t.created || !t.committed {
		return fmt.Errorf("remove %s: only a file the restore created is removed", t.path)
	}
	return t.place.removeName(t.buffered)
}

// Close releases the target and its lock. With abort (or when Commit
// fails), a file created by Open is removed; without, an uncommitted
// target is committed first (see Commit).
func (t *Target) Close(abort bool) error {
	var err error
	if !abort {
		err = t.Commit()
	}
	if cerr := t.release(); err == nil {
		err = cerr
	}
	return err
}

// WriteFile writes data (a restored blob) to path as a regular file: under
// the partial name beside it (created and locked relative to the directory's
// descriptor, as for images), synced and renamed into place, with the
// directory synced. The symlink policy of Open applies
// (opts.FollowSymlinks), and so does the lock: a run writing the same target
// fails this one at once (restore.ErrTargetBusy). An existing path must be a
// regular file and needs opts.Force (restore.ErrTargetExists otherwise), and gets
// the checks of an image target: writable by this user, not a disk image
// container (restore.ErrTargetFormat), not in use (restore.ErrTargetInUse), not part of
// opts.StoreDir (restore.ErrTargetInStore); devices, FIFOs and directories are
// refused. Other options are ignored.
func WriteFile(path string, data []byte, opts Options) error {
	pl, st, err := openWriteFilePlace(path, opts)
	if err != nil {
		return err
	}
	defer pl.close()
	if err := checkNotInStore(opts.StoreDir, pl.dir, nil, path); err != nil {
		return err
	}
	f, err := pl.createPartial(false)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			pl.removePartial()
		}
		f.Close()
	}()
	if st != nil {
		// The file being replaced may be an image restored in place now.
		// It gets the checks of an image target: writable by this user
		// (opened for writing, as an image restore does, so a file the
		// user may not write is not replaced by a rename), not a disk
		// image container, not in use, not part of the store.
		fd, err := unix.Openat(int(pl.dir.Fd()), pl.name, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		old := os.NewFile(uintptr(fd), path)
		err = lockFile(old, path)
		if err == nil {
			err = checkNotInStore(opts.StoreDir, pl.dir, old, path)
		}
		if err == nil {
			err = checkNoRecordLocks(old, path)
		}
		var ost unix.Stat_t
		if err == nil {
			if err = unix.Fstat(fd, &ost); err == nil {
				err = checkNotLoopBacked(&ost, path)
			}
		}
		if err == nil {
			err = checkFormat(old, path, ost.Size, false)
		}
		old.Close()
		if err != nil {
			return err
		}
	} else if there, err := pl.lstatName(); err != nil {
		return err
	} else if there != nil {
		return fmt.Errorf("%s: %w: it was created by another program meanwhile", path, restore.ErrTargetExists)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("%s: write: %w", path, causeOf(err))
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %w", path, causeOf(err))
	}
	if err := pl.commit(opts.Force); err != nil {
		return err
	}
	committed = true
	return nil
}
