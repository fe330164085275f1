package filetarget

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/restore"
)

// recordXattr is the extended attribute of a regular file target that holds
// its restore.Record.
const recordXattr = "user.pbsdirect.record"

// maxRecord bounds the record read back, in bytes.
const maxRecord = 4096

// recordIdentity is TargetIdentity of f without a file's change time,
// which setting the record changes.
func recordIdentity(f *os.File) (restore.Completion, error) {
	id, err := TargetIdentity(f)
	id.CtimeNs = 0
	return id, err
}

// KeepRecord replaces the target's record by r (restore.RecordKeeper):
// the extended attribute of a regular file (on a file system without user
// extended attributes, a record file among JournalDirs named by a hash of
// its path), the record file beside a block device's journal. A complete
// record gets the target's identity now. A nil r removes the record.
func (t *Target) KeepRecord(r *restore.Record) error {
	if t.buffered == nil {
		return errors.New("target closed")
	}
	if r != nil && r.Complete {
		id, err := recordIdentity(t.buffered)
		if err != nil {
			return err
		}
		r.Target = id
	}
	if t.device {
		jpath, err := JournalPath(t.path)
		if err != nil {
			return err
		}
		p := restore.RecordPath(jpath)
		if r == nil {
			return restore.RemoveRecord(p)
		}
		return restore.WriteRecord(p, *r)
	}
	fd := int(t.buffered.Fd())
	if r == nil {
		err := unix.Fremovexattr(fd, recordXattr)
		switch {
		case err != nil && noXattr(err):
			if p, perr := fileRecordPath(t.path); perr == nil {
				return restore.RemoveRecord(p)
			}
		case err != nil && !errors.Is(err, unix.ENODATA):
			return fmt.Errorf("%s: remove the restore record: %w", t.path, err)
		}
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	err = unix.Fsetxattr(fd, recordXattr, b, 0)
	switch {
	case err != nil && noXattr(err):
		// No user extended attributes here: a record file of its own.
		p, perr := fileRecordPath(t.path)
		if perr != nil {
			return perr
		}
		return restore.WriteRecord(p, *r)
	case err != nil:
		return fmt.Errorf("%s: set the restore record: %w", t.path, err)
	}
	return nil
}

// fileRecordPath returns where the record of the regular file target at
// path lives on a file system without user extended attributes:
// "record-<hash of its absolute path>" among JournalDirs.
func fileRecordPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return cachePath(path, "record-", abs)
}

// noXattr reports whether err says that the file system keeps no user
// extended attributes.
func noXattr(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS)
}

// TargetRecord returns the record of the last restore into the target at
// Path (restore.RecordReader); none: an error wrapping os.ErrNotExist.
func (s *Sink) TargetRecord() (restore.Record, error) {
	var r restore.Record
	if IsDevice(s.Path) {
		jpath, err := JournalPath(s.Path)
		if err != nil {
			return r, fmt.Errorf("%s: %w: %w", s.Path, err, os.ErrNotExist)
		}
		return restore.ReadRecord(restore.RecordPath(jpath))
	}
	f, err := s.openExisting()
	if err != nil {
		return r, err
	}
	defer f.Close()
	buf := make([]byte, maxRecord)
	n, err := unix.Fgetxattr(int(f.Fd()), recordXattr, buf)
	switch {
	case err != nil && noXattr(err):
		p, perr := fileRecordPath(s.Path)
		if perr != nil {
			return r, fmt.Errorf("%s: %w: %w", s.Path, perr, os.ErrNotExist)
		}
		return restore.ReadRecord(p)
	case errors.Is(err, unix.ENODATA):
		return r, fmt.Errorf("%s: no restore record: %w", s.Path, os.ErrNotExist)
	case err != nil:
		return r, fmt.Errorf("%s: read the restore record: %w", s.Path, err)
	}
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		return r, fmt.Errorf("%s: unreadable restore record: %w", s.Path, err)
	}
	return r, nil
}

// CurrentIdentity returns the identity of the target at Path now, as
// KeepRecord records it (restore.RecordReader).
func (s *Sink) CurrentIdentity() (restore.Completion, error) {
	f, err := s.openExisting()
	if err != nil {
		return restore.Completion{}, err
	}
	defer f.Close()
	return recordIdentity(f)
}

// openExisting opens what is at Path for reading: a regular file (a
// symbolic link only with FollowSymlinks) or a block device.
func (s *Sink) openExisting() (*os.File, error) {
	flags := os.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK
	if !s.Options.FollowSymlinks && !IsDevice(s.Path) {
		flags |= unix.O_NOFOLLOW
	}
	f, err := os.OpenFile(s.Path, flags, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || !(st.Mode().IsRegular() || (st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0)) {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file or block device", s.Path)
	}
	return f, nil
}

var (
	_ restore.RecordKeeper = (*Target)(nil)
	_ restore.RecordReader = (*Sink)(nil)
)

// OpenReadBack opens the existing target at Path for reading back
// (uncached where possible), without locking or changing it
// (restore.ReadBackOpener): what a dry run of a differential restore reads.
// A missing target returns an error wrapping os.ErrNotExist.
func (s *Sink) OpenReadBack() (restore.BackReader, error) {
	f, err := s.openExisting()
	if err != nil {
		return nil, err
	}
	r, err := readerOf(f, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &ownedReader{fileReader: r, f: f}, nil
}

// ownedReader is a fileReader that also closes the file it reads.
type ownedReader struct {
	*fileReader
	f *os.File
}

// Close closes the reader and its file.
func (r *ownedReader) Close() error {
	err := r.fileReader.Close()
	if ferr := r.f.Close(); err == nil {
		err = ferr
	}
	return err
}

var _ restore.ReadBackOpener = (*Sink)(nil)
