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

// KeepRecord replaces the target's record by r (restore.RecordKeeper):
// the extended attribute of a regular file (on a file system without user
// extended attributes, a record file among JournalDirs named by a hash of
// its path), the record file beside a block device's journal. A complete
// record gets the target's identity now (r.Target, Finished set). A
// regular file's change time, which setting the extended attribute
// changes, is taken after it is set and kept in the record file among
// JournalDirs (its stamp, see TargetRecord); writing that changes nothing
// of the target. A nil r removes the record (and the stamp).
func (t *Target) KeepRecord(r *restore.Record) error {
	if t.buffered == nil {
		return errors.New("target closed")
	}
	if r != nil && r.Complete {
		id, err := TargetIdentity(t.buffered)
		if err != nil {
			return err
		}
		id.Finished = r.Finished
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
	if r == nil || !r.Complete {
		// No stamp vouches for the file any longer.
		if p, perr := fileRecordPath(t.path); perr == nil {
			if err := restore.RemoveRecord(p); err != nil {
				return err
			}
		}
	}
	if r == nil {
		err := unix.Fremovexattr(fd, recordXattr)
		if err != nil && !noXattr(err) && !errors.Is(err, unix.ENODATA) {
			return fmt.Errorf("%s: remove the restore record: %w", t.path, err)
		}
		return nil
	}
	x := *r
	x.Target.CtimeNs = 0 // setting it changes it: kept in the stamp
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	err = unix.Fsetxattr(fd, recordXattr, b, 0)
	if err != nil && !noXattr(err) {
		return fmt.Errorf("%s: set the restore record: %w", t.path, err)
	}
	if err != nil || r.Complete {
		// No user extended attributes here: the record file is the
		// record; otherwise it is the complete record's stamp, with
		// the change time the extended attribute left.
		p, perr := fileRecordPath(t.path)
		if perr != nil {
			return perr
		}
		if err == nil {
			id, ierr := TargetIdentity(t.buffered)
			if ierr != nil {
				return ierr
			}
			r.Target.CtimeNs = id.CtimeNs
		}
		return restore.WriteRecord(p, *r)
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
// Path (restore.RecordReader); none: an error wrapping os.ErrNotExist. A
// regular file's complete record gets its change time from its stamp
// among JournalDirs (KeepRecord); with no stamp of the same record it is
// 0, which no file's identity matches.
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
	if r.Complete {
		// The file's change time after the record was set: from the
		// stamp of this same record. Without one it stays unknown (0),
		// and the target is taken as changed.
		r.Target.CtimeNs = 0
		if p, err := fileRecordPath(s.Path); err == nil {
			if st, err := restore.ReadRecord(p); err == nil && st.Complete && st.Snapshot == r.Snapshot && st.Archive == r.Archive &&
				st.IndexCsum == r.IndexCsum && st.Started.Equal(r.Started) {
				c := st.Target
				c.CtimeNs = 0
				if c.Same(r.Target) {
					r.Target.CtimeNs = st.Target.CtimeNs
				}
			}
		}
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
	return TargetIdentity(f)
}

// openExisting opens what is at Path for reading: a regular file (a
// symbolic link only with FollowSymlinks: otherwise an error wrapping
// restore.ErrTargetSymlink) or a block device.
func (s *Sink) openExisting() (*os.File, error) {
	flags := os.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK
	if !s.Options.FollowSymlinks && !IsDevice(s.Path) {
		flags |= unix.O_NOFOLLOW
	}
	f, err := os.OpenFile(s.Path, flags, 0)
	if errors.Is(err, unix.ELOOP) && flags&unix.O_NOFOLLOW != 0 {
		return nil, fmt.Errorf("%s: %w: refusing to read through it (name the file itself, or give --follow-symlinks)", s.Path, restore.ErrTargetSymlink)
	}
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
