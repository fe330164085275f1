package filetarget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/restore"
)

// ReadBack is restore.ReadBackFrom of the file or block device at path,
// opened read-only for it (uncached: O_DIRECT where possible, so the device
// and not the page cache answers). path names it in messages.
func ReadBack(ctx context.Context, path string, plan *restore.Plan, cc *crypto.Config, jobs int, stats *restore.ReadBackStats) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return ReadBackFile(ctx, f, path, plan, cc, jobs, stats)
}

// ReadBackFile is ReadBack of the open file f (a Target's, held since the
// restore): the O_DIRECT reader is opened on the same file through
// /proc/self/fd, never by path again, so a directory moved or a link
// swapped meanwhile cannot make it read another file. path names f in
// messages.
func ReadBackFile(ctx context.Context, f *os.File, path string, plan *restore.Plan, cc *crypto.Config, jobs int, stats *restore.ReadBackStats) error {
	r, err := readerOf(f, true)
	if err != nil {
		return err
	}
	defer r.Close()
	return restore.ReadBackFrom(ctx, r, path, plan, cc, jobs, stats)
}

// ReadBack opens a reader of the target's open file (restore.ReadBacker):
// uncached, through an O_DIRECT descriptor on the same file where the file
// system allows it, else with its cached pages dropped first; cached,
// through a read-only descriptor of its own. It fails once the target is
// closed.
func (t *Target) ReadBack(uncached bool) (restore.BackReader, error) {
	if t.buffered == nil {
		return nil, fmt.Errorf("%s: closed", t.path)
	}
	return readerOf(t.buffered, uncached)
}

// Identity returns the completion identity of the open target
// (restore.Identified): TargetIdentity of its file.
func (t *Target) Identity() (restore.Completion, error) {
	if t.buffered == nil {
		return restore.Completion{}, fmt.Errorf("%s: closed", t.path)
	}
	return TargetIdentity(t.buffered)
}

// fileReader reads a file back (restore.BackReader): through direct (an
// O_DIRECT descriptor on the same file; nil without) at aligned offsets,
// through f otherwise. It closes what it opened, never f.
type fileReader struct {
	f, direct *os.File
	own       *os.File // a descriptor opened for the reader, closed by Close
}

// readerOf opens a reader of f: uncached through O_DIRECT where possible
// (else with f's cached pages dropped), cached through a read-only
// descriptor of its own on the same file.
func readerOf(f *os.File, uncached bool) (*fileReader, error) {
	if !uncached {
		r, err := openSame(f, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		return &fileReader{f: r, own: r}, nil
	}
	if d, err := openSame(f, os.O_RDONLY|unix.O_DIRECT); err == nil {
		return &fileReader{f: f, direct: d, own: d}, nil
	}
	// No O_DIRECT: drop the cached pages so the reads reach the storage.
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return &fileReader{f: f}, nil
}

// ReadAt reads len(p) bytes at off: through the O_DIRECT descriptor when
// off is aligned, reading up to the next restore.Alignment multiple of
// len(p) into p's capacity (a read the file system refuses there, EINVAL,
// is done again buffered), else buffered. A short read at the end of the
// file is io.ErrUnexpectedEOF.
func (r *fileReader) ReadAt(p []byte, off int64) (int, error) {
	length := len(p)
	rd, buf := r.f, p
	if r.direct != nil && off%restore.Alignment == 0 {
		rd, buf = r.direct, p[:min(cap(p), alignUp(length))]
	}
	n, err := rd.ReadAt(buf, off)
	if n >= length {
		return length, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, unix.EINVAL) && rd == r.direct {
		if n, err = r.f.ReadAt(p, off); n == length {
			return length, nil
		}
	}
	return n, err
}

// alignUp rounds n up to a multiple of restore.Alignment.
func alignUp(n int) int { return (n + restore.Alignment - 1) &^ (restore.Alignment - 1) }

// Data returns the parts of [off, off+length) that hold data according to
// SEEK_DATA/SEEK_HOLE (all of it when the file system cannot tell).
func (r *fileReader) Data(off, length uint64) [][2]uint64 {
	end := off + length
	fd := int(r.f.Fd())
	var segs [][2]uint64
	for pos := off; pos < end; {
		data, err := unix.Seek(fd, int64(pos), unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, unix.ENXIO) { // only a hole up to EOF
				break
			}
			return [][2]uint64{{off, end}}
		}
		if uint64(data) >= end {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return [][2]uint64{{off, end}}
		}
		segs = append(segs, [2]uint64{uint64(data), min(uint64(hole), end)})
		pos = uint64(hole)
	}
	return segs
}

// Close closes the descriptor the reader opened, if any.
func (r *fileReader) Close() error {
	if r.own == nil {
		return nil
	}
	return r.own.Close()
}

// openSame opens the file f is open on again, with flags, through
// /proc/self/fd, and checks that it is the same inode.
func openSame(f *os.File, flags int) (*os.File, error) {
	d, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var a, b unix.Stat_t
	if unix.Fstat(int(d.Fd()), &a) != nil || unix.Fstat(int(f.Fd()), &b) != nil || a.Ino != b.Ino || a.Dev != b.Dev {
		d.Close()
		return nil, fmt.Errorf("%s: reopened descriptor is another file", f.Name())
	}
	return d, nil
}
