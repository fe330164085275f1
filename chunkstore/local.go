package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// Local is a datastore directory on a filesystem (§1). It reads chunks from
// ".chunks/<4hex>/<digest>", ignoring ".bad", ".using" and temp files, and
// treats 0-byte chunk files as absent data (§1.2).
//
// The datastore directory and its ".chunks" directory are opened once, so a
// link a user made to move the whole datastore, or its chunks, to another
// disk is followed there. Below them every file is opened relative to those
// directories without following any symbolic link, as PBS never makes one:
// a link planted in a hostile store (a chunk file, a ".chunks/<4hex>"
// directory, a group or snapshot directory, a snapshot file) is refused with
// an error naming it, for reads and for writes alike, so nothing is read
// from or written to outside the datastore.
type Local struct {
	root   string
	dir    *os.File // the datastore directory
	chunks *os.File // its .chunks directory
	lock   *os.File
	// onDir, when set (tests), runs as ListFiles enters a directory,
	// before its entries are read: where a concurrent prune strikes.
	onDir func(path string)
	// limit caps the reads (LimitReads); nil: none.
	limit *ratelimit.Limiter
	// Warnings say what listings of this store leave out (WarnTo).
	Warnings
}

var (
	_ WriteStore      = (*Local)(nil)
	_ SnapshotClaimer = (*Local)(nil)
	_ ChunkStatter    = (*Local)(nil)
	_ ChunkReplacer   = (*Local)(nil)
)

// OpenLocal opens the datastore directory root. With create, a missing
// datastore is created in the PBS layout (".chunks" with its 65536 prefix
// directories, ".lock") and a shared fcntl read lock is held on ".lock" until
// Close, as PBS expects of writers (§9). Without create, root must exist and
// nothing is written. The store holds root and root/.chunks open until Close.
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
			// Readable? Found now, not at the first chunk (openDirs).
		case err == nil, errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("datastore %s: %w: not a PBS datastore (no .chunks directory); --store must name the datastore directory itself", root, ErrNotFound)
		default:
			// Permission denied stays permission denied, with the path.
			return nil, fmt.Errorf("datastore %s: %s: %w", root, chunks, mapErr(err))
		}
		if err := l.openDirs(); err != nil {
			return nil, err
		}
		return l, nil
	}
	if err := l.create(); err != nil {
		return nil, err
	}
	if err := l.openDirs(); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(int(l.dir.Fd()), ".lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("datastore %s: .lock: %w", root, linkErr(err))
	}
	f := os.NewFile(uintptr(fd), filepath.Join(root, ".lock"))
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		f.Close()
		l.Close()
		return nil, fmt.Errorf("datastore %s: cannot take shared lock on .lock (garbage collection running?): %v", root, err)
	}
	l.lock = f
	return l, nil
}

// openDirs opens the datastore directory and its .chunks directory,
// following links to them (a datastore or its chunks moved to another disk).
func (l *Local) openDirs() error {
	dir, err := os.OpenFile(l.root, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("datastore %s: %w", l.root, mapErr(err))
	}
	fd, err := unix.Openat(int(dir.Fd()), ".chunks", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		dir.Close()
		return fmt.Errorf("datastore %s: %s: %w", l.root, filepath.Join(l.root, ".chunks"), mapErr(err))
	}
	l.dir, l.chunks = dir, os.NewFile(uintptr(fd), filepath.Join(l.root, ".chunks"))
	return nil
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

// ErrSymlink is wrapped by Local's errors for a symbolic link inside the
// datastore where PBS never makes one; it matches ErrDamaged (the path was
// read and is not what PBS writes there).
var ErrSymlink = DamageKind("symbolic link inside the datastore (PBS never makes one there; not followed)")

// ErrNotRegular is wrapped by Local's errors for a FIFO, device, socket or
// directory where PBS writes a regular file (an index, a manifest); it
// matches ErrDamaged.
var ErrNotRegular = DamageKind("not a regular file")

// unwrapPath returns the cause of an *fs.PathError (whose text repeats the
// path the caller names), or err.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// linkErr turns the ELOOP of an O_NOFOLLOW open into ErrSymlink, and maps
// the rest as mapErr does.
func linkErr(err error) error {
	if errors.Is(err, unix.ELOOP) {
		return ErrSymlink
	}
	return mapErr(err)
}

// openBeneath opens rel ('/'-separated, already validated) below dir
// without following a symbolic link at any component, with flags for the
// last one. Missing components give an error wrapping ErrNotFound, links
// one wrapping ErrSymlink; errors name the full path below root.
func openBeneath(dir *os.File, root, rel string, flags int) (*os.File, error) {
	parts := strings.Split(rel, "/")
	fd := int(dir.Fd())
	var opened []int
	defer func() {
		for _, d := range opened {
			unix.Close(d)
		}
	}()
	for i, part := range parts {
		fl := unix.O_RDONLY | unix.O_DIRECTORY
		if i == len(parts)-1 {
			fl = flags
		}
		nfd, err := unix.Openat(fd, part, fl|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			p := filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i+1], "/")))
			if errors.Is(err, unix.ENOTDIR) && isLinkAt(fd, part) {
				err = unix.ELOOP
			}
			return nil, &fs.PathError{Op: "open", Path: p, Err: linkErr(err)}
		}
		if i == len(parts)-1 {
			return os.NewFile(uintptr(nfd), filepath.Join(root, filepath.FromSlash(rel))), nil
		}
		opened = append(opened, nfd)
		fd = nfd
	}
	return nil, fmt.Errorf("open %s: empty path", root)
}

// isLinkAt reports whether name in directory fd is a symbolic link.
func isLinkAt(fd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// mkdirBeneath creates the directories of rel below dir as needed, never
// through a symbolic link, and returns the last one opened.
func mkdirBeneath(dir *os.File, root, rel string) (*os.File, error) {
	fd := int(dir.Fd())
	var opened []int
	defer func() {
		for _, d := range opened {
			unix.Close(d)
		}
	}()
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if err := unix.Mkdirat(fd, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i+1], "/"))), Err: mapErr(err)}
		}
		nfd, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) && isLinkAt(fd, part) {
				err = unix.ELOOP
			}
			return nil, &fs.PathError{Op: "open", Path: filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i+1], "/"))), Err: linkErr(err)}
		}
		if i == len(parts)-1 {
			return os.NewFile(uintptr(nfd), filepath.Join(root, filepath.FromSlash(rel))), nil
		}
		opened = append(opened, nfd)
		fd = nfd
	}
	return nil, fmt.Errorf("mkdir %s: empty path", root)
}

// ReadChunk reads the chunk file for d into buf (see Store.ReadChunk): a
// file larger than limit is refused by its size, unread; a chunk file or
// prefix directory that is a symbolic link is refused (ErrSymlink).
func (l *Local) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	if err := l.limit.WaitRequest(ctx); err != nil {
		return nil, err
	}
	h := d.String()
	buf, err := l.readChunkFile(ctx, h[:4]+"/"+h, buf, limit)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, err
		}
		return nil, fmt.Errorf("chunk %s: %w", d, err)
	}
	return buf, nil
}

// readChunkFile reads the file rel below .chunks into buf, at most limit
// bytes (see Store.ReadChunk), following no symbolic link, each piece
// waiting for the byte rate before it is read (LimitReads); errors name
// the file, but for ctx's error, returned as it is.
func (l *Local) readChunkFile(ctx context.Context, rel string, buf []byte, limit int) ([]byte, error) {
	p := filepath.Join(l.chunks.Name(), filepath.FromSlash(rel))
	f, err := openRegular(l.chunks, l.chunks.Name(), rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, &LocatedError{Location: p, Err: fmt.Errorf("%w (evicted-chunk marker or corruption)", ErrEmpty)}
	}
	if max := ReadLimit(limit); size > max {
		return nil, &LocatedError{Location: p, Err: fmt.Errorf("%w: file is %d bytes, the chunk at most %d", ErrTooLarge, size, max)}
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	// The file may change while read: never more than size bytes.
	if _, err := l.limit.ReadFull(ctx, f, buf); err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, err
		}
		// The cause is kept (an EIO is a failure outside the data).
		return nil, &LocatedError{Location: p, Err: unwrapPath(err)}
	}
	return buf, nil
}

// clean validates a content path: datastore-relative, no "..", not in .chunks.
func clean(rel string) (string, error) {
	c := filepath.Clean("/" + rel)[1:]
	if c == "" || c != strings.TrimSuffix(rel, "/") || strings.HasPrefix(c, ".chunks") {
		return "", fmt.Errorf("invalid content path %q", rel)
	}
	return c, nil
}

// OpenFile opens a content file (see Store.OpenFile), refusing symbolic
// links on the way (ErrSymlink).
func (l *Local) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	c, err := clean(rel)
	if err != nil {
		return nil, 0, err
	}
	if err := l.limit.WaitRequest(ctx); err != nil {
		return nil, 0, err
	}
	f, err := openRegular(l.dir, l.root, c)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return l.limit.FileReader(ctx, f), st.Size(), nil
}

// openRegular opens rel below dir (see openBeneath) for reading without
// blocking on a FIFO or device (O_NONBLOCK, which regular files ignore) and
// refuses anything but a regular file, so a hostile datastore cannot hang
// a restore.
func openRegular(dir *os.File, root, rel string) (*os.File, error) {
	f, err := openBeneath(dir, root, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &LocatedError{Location: f.Name(), Err: err}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &LocatedError{Location: f.Name(), Err: fmt.Errorf("%w (%s)", ErrNotRegular, st.Mode().Type())}
	}
	return f, nil
}

// ListFiles walks the directory dir (see Store.ListFiles). On a live
// datastore a prune may remove a snapshot directory while it is walked:
// whatever vanishes between reading a directory and visiting its entries is
// left out (as PBS does), not an error. No symbolic link is followed.
func (l *Local) ListFiles(ctx context.Context, dir string) ([]FileInfo, error) {
	var out []FileInfo
	err := l.walk(dir, func(p string, de fs.DirEntry) error {
		if de.IsDir() {
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
		return nil, err
	}
	return out, nil
}

// ListDirs lists dir and the directories below it (see DirLister); like
// ListFiles it follows no symbolic link, skips ".chunks" and leaves out
// what a prune removes while it walks.
func (l *Local) ListDirs(ctx context.Context, dir string) ([]string, error) {
	var out []string
	err := l.walk(dir, func(p string, de fs.DirEntry) error {
		if !de.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(l.root, p)
		out = append(out, filepath.ToSlash(rel))
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walk walks the directory dir (relative to the root; dir itself
// included) and calls visit with each entry's path and entry, as
// filepath.WalkDir does. It follows no symbolic link (dir itself is reached
// without following any either), skips ".chunks" directories, and leaves
// out what vanishes while it walks (a prune); a missing dir is walked as
// empty. Errors, visit's included, name the directory walked.
func (l *Local) walk(dir string, visit func(p string, de fs.DirEntry) error) error {
	c, err := clean(dir)
	if err != nil {
		return err
	}
	d, err := openBeneath(l.dir, l.root, c, unix.O_RDONLY|unix.O_DIRECTORY)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("list %s: %w", filepath.Join(l.root, c), err)
	}
	d.Close()
	base := filepath.Join(l.root, c)
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
		if de.IsDir() && de.Name() == ".chunks" {
			return fs.SkipDir
		}
		return visit(p, de)
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", base, err)
	}
	return nil
}

// WriteChunk writes the chunk file atomically unless a non-empty one exists;
// an existing chunk gets its atime refreshed (§1.2, §9). A prefix directory
// that is a symbolic link is refused (ErrSymlink); a chunk file that is one
// is replaced, never written through.
func (l *Local) WriteChunk(ctx context.Context, d crypto.Digest, blob []byte) (bool, error) {
	h := d.String()
	dir, err := mkdirBeneath(l.chunks, l.chunks.Name(), h[:4])
	if err != nil {
		return false, fmt.Errorf("chunk %s: %w", d, err)
	}
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), h, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0 {
		now := unix.NsecToTimespec(time.Now().UnixNano())
		omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
		if err := unix.UtimesNanoAt(int(dir.Fd()), h, []unix.Timespec{now, omit}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return true, fmt.Errorf("chunk %s: touch %s: %v", d, l.ChunkLocation(d), err)
		}
		return true, nil
	}
	if err := writeAtomic(dir, h, blob, 0o640); err != nil {
		return false, fmt.Errorf("chunk %s: %w", d, err)
	}
	return false, nil
}

// WriteFile writes a content file atomically, creating its directories;
// none of them may be a symbolic link (ErrSymlink).
func (l *Local) WriteFile(ctx context.Context, rel string, data []byte) error {
	c, err := clean(rel)
	if err != nil {
		return err
	}
	dirRel, name := path.Split(c)
	dir := l.dir
	if dirRel != "" {
		if dir, err = mkdirBeneath(l.dir, l.root, strings.TrimSuffix(dirRel, "/")); err != nil {
			return err
		}
		defer dir.Close()
	}
	return writeAtomic(dir, name, data, 0o644)
}

// writeAtomic writes name in dir through a temporary file and a rename,
// both relative to dir, so that the file lands in dir whatever happens to
// the paths meanwhile.
func writeAtomic(dir *os.File, name string, data []byte, perm os.FileMode) error {
	p := filepath.Join(dir.Name(), name)
	var tmp string
	var fd int
	for {
		tmp = fmt.Sprintf(".%s.tmp%d", name, rand.Uint32())
		var err error
		fd, err = unix.Openat(int(dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("write %s: %w", p, mapErr(err))
		}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp))
	_, err := f.Write(data)
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
		err = unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name)
	}
	if err != nil {
		unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// Close releases the datastore lock, if held, and the directories.
func (l *Local) Close() error {
	var err error
	for _, f := range []**os.File{&l.lock, &l.chunks, &l.dir} {
		if *f != nil {
			if cerr := (*f).Close(); err == nil {
				err = cerr
			}
			*f = nil
		}
	}
	return err
}

// ClaimSnapshot takes the group's writer lock — flock(LOCK_EX|LOCK_NB) on
// the group directory, as PBS writers take it (§1.5, the lock PBS before
// 3.3.5 uses, and every pbsdirect backup) — and creates the snapshot
// directory. The group directory is created and opened below the datastore
// without following a link (ErrSymlink). A snapshot directory left by a
// failed backup (no manifest) is reused: the lock proves nobody writes it.
// A snapshot directory this claim created that has no manifest at release
// (a failed or interrupted backup) is removed with what was written into
// it, and so is the group directory when the claim created it and it is
// left empty; directories the claim did not create are never removed.
// See SnapshotClaimer.
func (l *Local) ClaimSnapshot(ctx context.Context, snapDir string) (func() error, error) {
	c, err := clean(snapDir)
	if err != nil {
		return nil, err
	}
	groupRel, name := path.Split(c)
	if groupRel == "" {
		return nil, fmt.Errorf("invalid snapshot directory %q", snapDir)
	}
	var gst unix.Stat_t
	groupNew := errors.Is(unix.Fstatat(int(l.dir.Fd()), strings.TrimSuffix(groupRel, "/"), &gst, unix.AT_SYMLINK_NOFOLLOW), unix.ENOENT)
	g, err := mkdirBeneath(l.dir, l.root, strings.TrimSuffix(groupRel, "/"))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: group directory: %w", snapDir, err)
	}
	group := g.Name()
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
	err = unix.Mkdirat(int(g.Fd()), name, 0o755)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		g.Close()
		return nil, fmt.Errorf("snapshot %s: create %s: %w", snapDir, filepath.Join(group, name), mapErr(err))
	}
	if err == nil {
		return func() error { return errors.Join(dropUnfinished(g, name, groupNew), g.Close()) }, nil
	}
	return g.Close, nil
}

// StatChunk returns the size of the chunk file for d (see ChunkStatter): a
// missing one wraps ErrNotFound; a chunk file or prefix directory that is a
// symbolic link is refused (ErrSymlink).
func (l *Local) StatChunk(ctx context.Context, d crypto.Digest) (int64, error) {
	h := d.String()
	f, err := openRegular(l.chunks, l.chunks.Name(), h[:4]+"/"+h)
	if err != nil {
		return 0, fmt.Errorf("chunk %s: %w", d, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("chunk %s: %v", d, err)
	}
	return st.Size(), nil
}

// ReplaceChunk renames the chunk file for d to the first free
// "<digest>.N.bad" in its prefix directory (N 0…9; an existing .bad copy
// is never overwritten: when all are taken it returns an error wrapping
// ErrNoFreeBadName and leaves the chunk as it is) and writes blob in its
// place (see ChunkReplacer).
func (l *Local) ReplaceChunk(ctx context.Context, d crypto.Digest, old, blob []byte) (string, error) {
	h := d.String()
	dir, err := mkdirBeneath(l.chunks, l.chunks.Name(), h[:4])
	if err != nil {
		return "", fmt.Errorf("chunk %s: %w", d, err)
	}
	defer dir.Close()
	aside, free := "", false
	for n := range MaxBadGenerations {
		bad := BadName(d, n)
		err := unix.Renameat2(int(dir.Fd()), h, int(dir.Fd()), bad, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) {
			// A file system without RENAME_NOREPLACE: look, then rename.
			var st unix.Stat_t
			if err = unix.Fstatat(int(dir.Fd()), bad, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				continue
			}
			err = unix.Renameat(int(dir.Fd()), h, int(dir.Fd()), bad)
		}
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		free = true
		if err == nil {
			aside = filepath.Join(dir.Name(), bad)
		} else if !errors.Is(err, unix.ENOENT) {
			return "", fmt.Errorf("chunk %s: rename %s aside: %w", d, l.ChunkLocation(d), mapErr(err))
		}
		break
	}
	if !free {
		return "", fmt.Errorf("chunk %s: %s: %w", d, l.ChunkLocation(d), ErrNoFreeBadName)
	}
	if err := writeAtomic(dir, h, blob, 0o640); err != nil {
		return aside, fmt.Errorf("chunk %s: %w", d, err)
	}
	return aside, nil
}
