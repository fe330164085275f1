package restore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Target receives restored bytes at absolute offsets. WriteAt may be called
// concurrently and out of order. Implementations: FileTarget (regular file or
// block device) and Discard (verify).
type Target interface {
	// WriteAt writes p at byte offset off. p is Alignment-aligned in memory.
	WriteAt(p []byte, off int64) error
	// Zero makes [off, off+length) read as zeros, unless the target is known
	// to read as zeros already (a new sparse file, --assume-zeroed).
	Zero(off, length int64) error
	// Allocate reserves storage for [off, off+length) before data is written
	// there, where the file system writes reserved space in place (ext4,
	// XFS): a full file system then fails the restore before any chunk is
	// fetched, and O_DIRECT writes into the range are overwrites, which run
	// concurrently instead of one at a time under the inode lock. A no-op
	// elsewhere.
	Allocate(off, length int64) error
	// Sync makes every written byte durable (fdatasync).
	Sync() error
	// Close releases the target. After a failed restore, abort = true removes
	// a file the target created itself.
	Close(abort bool) error
	// Direct reports whether O_DIRECT writes are in use.
	Direct() bool
}

// Discard is the target of verify: it accepts and drops everything.
type Discard struct{}

// WriteAt drops p.
func (Discard) WriteAt(p []byte, off int64) error { return nil }

// Zero does nothing.
func (Discard) Zero(off, length int64) error { return nil }

// Allocate does nothing.
func (Discard) Allocate(off, length int64) error { return nil }

// Sync does nothing.
func (Discard) Sync() error { return nil }

// Close does nothing.
func (Discard) Close(bool) error { return nil }

// Direct reports false.
func (Discard) Direct() bool { return false }

// TargetOptions select how OpenTarget treats an existing target.
type TargetOptions struct {
	// Force allows overwriting an existing regular file; zero ranges are then
	// punched (or written) so the file matches the image exactly.
	Force bool
	// AssumeZeroed tells that a block device already reads as zeros: zero
	// ranges are skipped instead of zeroed.
	AssumeZeroed bool
	// NoDirect disables O_DIRECT.
	NoDirect bool
}

// FileTarget writes to a regular file or a block device with positioned
// writes, through O_DIRECT where the filesystem allows it and aligned
// offsets and lengths permit; other writes go through a buffered descriptor.
type FileTarget struct {
	path      string
	open      string // the name written to: path, or a temporary name for a new file
	buffered  *os.File
	direct    *os.File // nil when O_DIRECT is unavailable
	directOK  atomic.Bool
	device    bool
	created   bool
	zeroNeeds bool // Zero must act (existing file, or device not assumed zeroed)
	reserve   bool // Allocate reserves space (a regular file on ext4 or XFS)
	size      int64
}

// ErrTargetExists is returned by OpenTarget for an existing regular file
// without TargetOptions.Force.
var ErrTargetExists = errors.New("target exists (use --force to overwrite)")

// OpenTarget opens path for an image of size bytes. A missing path is created
// as a sparse regular file; an existing regular file needs opts.Force and is
// truncated to size; a block device must be at least size bytes.
func OpenTarget(path string, size int64, opts TargetOptions) (*FileTarget, error) {
	t := &FileTarget{path: path, open: path, size: size}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0:
		t.device = true
		t.zeroNeeds = !opts.AssumeZeroed
	case err == nil && st.Mode().IsRegular():
		if !opts.Force {
			return nil, fmt.Errorf("%s: %w", path, ErrTargetExists)
		}
		t.zeroNeeds = true
	case err == nil:
		return nil, fmt.Errorf("%s: not a regular file or block device", path)
	case errors.Is(err, os.ErrNotExist):
		t.created = true
	default:
		return nil, err
	}
	flags := os.O_WRONLY
	if t.created || t.device {
		// New file: never clobber one that appeared meanwhile. Block device:
		// exclusive open, refused (EBUSY) while it is mounted or in use.
		flags |= os.O_EXCL
	}
	if t.created {
		// A new file is written under a temporary name beside the target and
		// renamed into place only when the restore succeeded (Close), so a
		// killed restore never leaves a partial image under the real name.
		flags |= os.O_CREATE
		t.open = filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.pbsdirect-%d-%d", filepath.Base(path), os.Getpid(), time.Now().UnixNano()))
	}
	f, err := os.OpenFile(t.open, flags, 0o644)
	if err != nil {
		if t.device && errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("%s: block device is in use (mounted, or held by another program): %w", path, err)
		}
		return nil, err
	}
	t.buffered = f
	if t.device {
		devSize, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: block device size: %v", path, err)
		}
		if int64(devSize) < size {
			f.Close()
			return nil, fmt.Errorf("%s: block device has %d bytes, image needs %d", path, devSize, size)
		}
	} else if err := f.Truncate(size); err != nil {
		t.Close(true)
		return nil, fmt.Errorf("%s: truncate to %d bytes: %v", path, size, err)
	}
	if !t.device {
		t.reserve = reservesInPlace(f)
	}
	if !opts.NoDirect {
		if d, err := os.OpenFile(t.open, os.O_WRONLY|unix.O_DIRECT, 0); err == nil {
			t.direct = d
			t.directOK.Store(true)
		}
	}
	return t, nil
}

// Direct reports whether O_DIRECT writes are in use.
func (t *FileTarget) Direct() bool { return t.directOK.Load() }

// Created reports whether OpenTarget created the target file.
func (t *FileTarget) Created() bool { return t.created }

// ZeroHandling says what Zero does to zero ranges on this target: "holes"
// (a new sparse file), "punched" (an existing file), "zeroed" (a block
// device, BLKZEROOUT or written zeros) or "skipped" (--assume-zeroed).
func (t *FileTarget) ZeroHandling() string {
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
// Alignment multiples, buffered otherwise. An O_DIRECT write the filesystem
// refuses (EINVAL) switches the target to buffered writes for good.
func (t *FileTarget) WriteAt(p []byte, off int64) error {
	if t.directOK.Load() && off%Alignment == 0 && len(p)%Alignment == 0 {
		_, err := t.direct.WriteAt(p, off)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%s: write %d bytes at offset %d: %w", t.path, len(p), off, err)
		}
		t.directOK.Store(false)
	}
	if _, err := t.buffered.WriteAt(p, off); err != nil {
		return fmt.Errorf("%s: write %d bytes at offset %d: %w", t.path, len(p), off, err)
	}
	return nil
}

// Zero makes [off, off+length) read as zeros where that is needed: holes are
// punched in an existing file, BLKZEROOUT is sent to a device; if those are
// unsupported, zeros are written.
func (t *FileTarget) Zero(off, length int64) error {
	if !t.zeroNeeds {
		return nil
	}
	fd := int(t.buffered.Fd())
	var err error
	if t.device {
		rng := [2]uint64{uint64(off), uint64(length)}
		err = blkZeroOut(fd, &rng)
	} else {
		err = unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length)
	}
	if err == nil {
		return nil
	}
	return t.writeZeros(off, length)
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
func (t *FileTarget) Allocate(off, length int64) error {
	if !t.reserve || length <= 0 {
		return nil
	}
	var err error
	for {
		err = unix.Fallocate(int(t.buffered.Fd()), 0, off, length)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
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

func (t *FileTarget) writeZeros(off, length int64) error {
	zeros := make([]byte, min(length, 1<<20))
	for length > 0 {
		n := min(length, int64(len(zeros)))
		if _, err := t.buffered.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("%s: write zeros at offset %d: %w", t.path, off, err)
		}
		off += n
		length -= n
	}
	return nil
}

// Sync flushes both descriptors with fdatasync.
func (t *FileTarget) Sync() error {
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

// Close closes the target. With abort, a file created by OpenTarget is
// removed. Otherwise a created file, written under a temporary name, is
// renamed to the target's name (never replacing a file that appeared there
// meanwhile) and the directory is synced, so that the new name is durable.
func (t *FileTarget) Close(abort bool) error {
	var first error
	for _, f := range []*os.File{t.direct, t.buffered} {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	t.direct, t.buffered = nil, nil
	if !t.created {
		return first
	}
	if abort || first != nil {
		os.Remove(t.open)
		return first
	}
	if err := renameNoReplace(t.open, t.path); err != nil {
		os.Remove(t.open)
		return fmt.Errorf("%s: %w", t.path, err)
	}
	return syncDir(filepath.Dir(t.path))
}

// renameNoReplace renames from to to unless to exists (RENAME_NOREPLACE;
// on file systems without it, a link and unlink, which fail the same way).
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if err = os.Link(from, to); err == nil {
			return os.Remove(from)
		}
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: it appeared while restoring; the restored image was removed", ErrTargetExists)
	}
	return err
}

// WriteFile writes data (a restored blob) to path as a regular file: through
// a temporary file beside it, synced and renamed into place, with the
// directory synced. An existing path must be a regular file and needs force
// (ErrTargetExists otherwise); devices, FIFOs and directories are refused.
func WriteFile(path string, data []byte, force bool) error {
	if st, err := os.Lstat(path); err == nil {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file: a blob is restored to a file", path)
		}
		if !force {
			return fmt.Errorf("%s: %w", path, ErrTargetExists)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".pbsdirect-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if force {
			err = os.Rename(tmp, path)
		} else {
			err = renameNoReplace(tmp, path)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable (fsync of the directory; file
// systems that cannot sync a directory answer EINVAL, which is ignored).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%s: sync directory: %w", dir, err)
	}
	return nil
}
