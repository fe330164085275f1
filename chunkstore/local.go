package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Local is a datastore directory on a filesystem (§1). It reads chunks from
// ".chunks/<4hex>/<digest>", ignoring ".bad", ".using" and temp files, and
// treats 0-byte chunk files as absent data (§1.2).
type Local struct {
	root string
	lock *os.File
	// onDir, when set (tests), runs as ListFiles enters a directory,
	// before its entries are read: where a concurrent prune strikes.
	onDir func(path string)
}

// OpenLocal opens the datastore directory root. With create, a missing
// datastore is created in the PBS layout (".chunks" with its 65536 prefix
// directories, ".lock") and a shared fcntl read lock is held on ".lock" until
// Close, as PBS expects of writers (§9). Without create, root must exist and
// nothing is written.
func OpenLocal(root string, create bool) (*Local, error) {
	st, err := os.Stat(root)
	switch {
	case err == nil && !st.IsDir():
		return nil, fmt.Errorf("datastore %s: not a directory", root)
	case err != nil && !(create && errors.Is(err, fs.ErrNotExist)):
		return nil, fmt.Errorf("datastore %s: %w", root, mapErr(err))
	}
	l := &Local{root: root}
	if !create {
		chunks := filepath.Join(root, ".chunks")
		st, err := os.Stat(chunks)
		switch {
		case err == nil && st.IsDir():
			// Readable? Found now, not at the first chunk.
			d, err := os.Open(chunks)
			if err != nil {
				return nil, fmt.Errorf("datastore %s: %s: %w", root, chunks, mapErr(err))
			}
			d.Close()
		case err == nil, errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("datastore %s: %w: not a PBS datastore (no .chunks directory); --store must name the datastore directory itself", root, ErrNotFound)
		default:
			// Permission denied stays permission denied, with the path.
			return nil, fmt.Errorf("datastore %s: %s: %w", root, chunks, mapErr(err))
		}
		return l, nil
	}
	if err := l.create(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("datastore %s: %w", root, err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		f.Close()
		return nil, fmt.Errorf("datastore %s: cannot take shared lock on .lock (garbage collection running?): %v", root, err)
	}
	l.lock = f
	return l, nil
}

func (l *Local) create() error {
	chunks := filepath.Join(l.root, ".chunks")
	if _, err := os.Stat(filepath.Join(chunks, "ffff")); err == nil {
		return nil
	}
	if err := os.MkdirAll(chunks, 0o750); err != nil {
		return fmt.Errorf("datastore %s: %w", l.root, err)
	}
	for i := 0; i < 1<<16; i++ {
		if err := os.Mkdir(filepath.Join(chunks, fmt.Sprintf("%04x", i)), 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("datastore %s: %w", l.root, err)
		}
	}
	return nil
}

// Root returns the datastore directory.
func (l *Local) Root() string { return l.root }

// String returns the datastore directory, for messages.
func (l *Local) String() string { return l.root }

// ChunkLocation returns the chunk's file path.
func (l *Local) ChunkLocation(d crypto.Digest) string {
	return filepath.Join(l.root, ChunkRelPath(d))
}

// mapErr maps a file system error to the store errors. The caller names
// the path, so an *fs.PathError gives only its cause ("open PATH: " is not
// repeated); a missing file is just ErrNotFound.
func mapErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return causeError{ErrNotFound, err, ErrNotFound.Error()}
	case errors.Is(err, fs.ErrPermission):
		return causeError{ErrDenied, err, fmt.Sprintf("%v: %v", ErrDenied, err)}
	}
	return err
}

// causeError is a store error (kind) for a system error (cause), said as msg.
type causeError struct {
	kind, cause error
	msg         string
}

func (e causeError) Error() string   { return e.msg }
func (e causeError) Unwrap() []error { return []error{e.kind, e.cause} }

// ReadChunk reads the chunk file for d into buf (see Store.ReadChunk).
func (l *Local) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte) ([]byte, error) {
	p := l.ChunkLocation(d)
	f, err := openRegular(p)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", d, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %v", d, err)
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("chunk %s: %s: %w (evicted-chunk marker or corruption)", d, p, ErrEmpty)
	}
	if size > MaxBlobSize+EncryptedHeaderSize {
		return nil, fmt.Errorf("chunk %s: %s: %w: file is %d bytes", d, p, ErrTooLarge, size)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("chunk %s: %s: %v", d, p, err)
	}
	return buf, nil
}

func (l *Local) abs(rel string) (string, error) {
	clean := filepath.Clean("/" + rel)[1:]
	if clean == "" || clean != strings.TrimSuffix(rel, "/") || strings.HasPrefix(clean, ".chunks") {
		return "", fmt.Errorf("invalid content path %q", rel)
	}
	return filepath.Join(l.root, clean), nil
}

// OpenFile opens a content file (see Store.OpenFile).
func (l *Local) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	p, err := l.abs(rel)
	if err != nil {
		return nil, 0, err
	}
	f, err := openRegular(p)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// openRegular opens p for reading without blocking on a FIFO or device
// (O_NONBLOCK, which regular files ignore) and refuses anything but a
// regular file, so a hostile datastore cannot hang a restore.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, mapErr(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", p, st.Mode().Type())
	}
	return f, nil
}

// ListFiles walks the directory dir (see Store.ListFiles). On a live
// datastore a prune may remove a snapshot directory while it is walked:
// whatever vanishes between reading a directory and visiting its entries is
// left out (as PBS does), not an error.
func (l *Local) ListFiles(ctx context.Context, dir string) ([]FileInfo, error) {
	base, err := l.abs(dir)
	if err != nil {
		return nil, err
	}
	var out []FileInfo
	err = filepath.WalkDir(base, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			switch {
			case errors.Is(err, fs.ErrNotExist) && p == base:
				return fs.SkipAll
			case errors.Is(err, fs.ErrNotExist):
				return nil // removed since its parent was read
			}
			return err
		}
		if de.IsDir() {
			if de.Name() == ".chunks" {
				return fs.SkipDir
			}
			if l.onDir != nil {
				l.onDir(p)
			}
			return nil
		}
		if !de.Type().IsRegular() {
			return nil
		}
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since its directory was read
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(l.root, p)
		out = append(out, FileInfo{Path: filepath.ToSlash(rel), Size: info.Size()})
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", base, err)
	}
	return out, nil
}

// WriteChunk writes the chunk file atomically unless a non-empty one exists;
// an existing chunk gets its atime refreshed (§1.2, §9).
func (l *Local) WriteChunk(ctx context.Context, d crypto.Digest, blob []byte) (bool, error) {
	p := l.ChunkLocation(d)
	if st, err := os.Stat(p); err == nil && st.Size() > 0 {
		now := unix.NsecToTimespec(time.Now().UnixNano())
		omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{now, omit}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return true, fmt.Errorf("chunk %s: touch %s: %v", d, p, err)
		}
		return true, nil
	}
	if err := writeAtomic(p, blob, 0o640); err != nil {
		return false, fmt.Errorf("chunk %s: %w", d, err)
	}
	return false, nil
}

// WriteFile writes a content file atomically, creating its directories.
func (l *Local) WriteFile(ctx context.Context, rel string, data []byte) error {
	p, err := l.abs(rel)
	if err != nil {
		return err
	}
	return writeAtomic(p, data, 0o644)
}

func writeAtomic(p string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// ClaimSnapshot takes the group's writer lock — flock(LOCK_EX|LOCK_NB) on
// the group directory, as PBS writers take it (§1.5, the lock PBS before
// 3.3.5 uses, and every pbsdirect backup) — and creates the snapshot
// directory. The group directory is opened without following a link. A
// snapshot directory left by a failed backup (no manifest) is reused: the
// lock proves nobody writes it. See SnapshotClaimer.
func (l *Local) ClaimSnapshot(ctx context.Context, snapDir string) (func() error, error) {
	p, err := l.abs(snapDir)
	if err != nil {
		return nil, err
	}
	group := filepath.Dir(p)
	if err := os.MkdirAll(group, 0o755); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", snapDir, mapErr(err))
	}
	g, err := os.OpenFile(group, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: group directory %s: %w", snapDir, group, mapErr(err))
	}
	for {
		err = unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		g.Close()
		return nil, fmt.Errorf("snapshot %s: %w: %s is locked (another backup of this group, or PBS, is running)", snapDir, ErrSnapshotBusy, group)
	}
	if err != nil {
		g.Close()
		return nil, fmt.Errorf("snapshot %s: lock %s: %w", snapDir, group, err)
	}
	if err := unix.Mkdirat(int(g.Fd()), filepath.Base(p), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		g.Close()
		return nil, fmt.Errorf("snapshot %s: create %s: %w", snapDir, p, mapErr(err))
	}
	return g.Close, nil
}

// Close releases the datastore lock, if held.
func (l *Local) Close() error {
	if l.lock != nil {
		err := l.lock.Close()
		l.lock = nil
		return err
	}
	return nil
}
