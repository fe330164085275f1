// Package extract writes the tree of a pxar archive into a directory:
// regular files, directories, symlinks, hardlinks, device nodes, FIFOs and
// sockets, with owners, modes, times, extended attributes, POSIX ACLs and
// file capabilities.
//
// Every file system call is made relative to an open directory descriptor,
// one path component at a time: names come from the decoder, which refuses
// "", ".", ".." and names holding "/" or NUL; directories are opened with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) where the kernel has it and
// O_NOFOLLOW|O_DIRECTORY otherwise; files are created O_EXCL|O_NOFOLLOW; a
// hardlink's target is resolved the same way from the top directory. A
// symlink in the archive is created, never followed, so whatever an archive
// says nothing is written outside the directory.
package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/pxar"
)

// Options say what Run extracts and how.
type Options struct {
	// NumericOwner is accepted for tar's --numeric-owner: pxar stores
	// numeric ids only (no user or group names), so the ids written are
	// always the archive's numbers (shifted by MapIDs), with or without it.
	NumericOwner bool
	// SameOwner sets owners as the archive says also when not running as
	// root (failures are then warnings); as GNU tar, root always sets
	// them and anyone else keeps its own uid and gid by default.
	SameOwner bool
	// MapIDs shifts every uid and gid (owners, ACL entries, the root uid
	// of revision-3 file capabilities) by this amount, as an unprivileged
	// container's id map does (PVE maps 0–65535 to 100000–165535:
	// MapIDs 100000). An id the shift would carry past 4294967294 fails.
	MapIDs uint32
	// Include restricts extraction to these archive paths (slash-separated
	// from the archive root, e.g. "etc/passwd" or "var/lib"), each with
	// everything below it; the directories above them are created with
	// their archive metadata. Empty extracts the whole tree. Either way
	// the root's metadata is applied to the directory itself.
	Include []string
	// Force extracts into a directory that is not empty, merging: an
	// existing entry at a path the archive has is replaced (a directory
	// is kept and gets the archive's metadata; a non-empty directory
	// where the archive has no directory fails), everything else in the
	// directory is kept; with Include the same holds for the directories
	// above the included paths (a symlink or file standing where one goes
	// is replaced by the directory, never followed). Not running as root,
	// an existing directory without owner write permission is given it
	// while entries are replaced in it and gets its mode back afterwards.
	// Without Force a non-empty directory is refused with ErrNotEmpty
	// before anything is read.
	Force bool
	// Progress, if set, is called with the content bytes written so far
	// after each write.
	Progress func(bytes int64)
	// Warn, if set, is called for each warning (a device node skipped
	// when not root, an owner that could not be set); the Report counts
	// them whether or not Warn is set.
	Warn func(msg string)

	// afterCreate, if set, is called after a device node, FIFO or
	// socket is created and before its metadata is set (tests: a racer).
	afterCreate func(parent int, name string)
}

// Report says what Run extracted. Bytes counts regular-file content bytes
// written (a hardlink adds none).
type Report struct {
	Files     int64 `json:"files"`
	Dirs      int64 `json:"dirs"`
	Symlinks  int64 `json:"symlinks"`
	Hardlinks int64 `json:"hardlinks"`
	Specials  int64 `json:"specials"` // device nodes, FIFOs, sockets created
	Bytes     int64 `json:"bytes"`
	// Warnings counts entries extracted incompletely or skipped (device
	// nodes without root, owners not set); WarningList holds the first
	// MaxWarningsListed.
	Warnings    int64    `json:"warnings"`
	WarningList []string `json:"warning-list,omitempty"`
}

// MaxWarningsListed bounds Report.WarningList.
const MaxWarningsListed = 100

// ErrNotEmpty is wrapped by Run's error for a non-empty directory without
// Options.Force.
var ErrNotEmpty = errors.New("directory not empty (give --force to merge into it)")

// ErrBusy is wrapped by Run's error when another Run (in this process or
// another) holds the directory's lock: one extraction into a directory at
// a time.
var ErrBusy = errors.New("being written by another pbsdirect run")

// ErrNotFound is wrapped by Run's error for an Options.Include path the
// archive does not have.
var ErrNotFound = errors.New("no such path in the archive")

// ErrIDRange is wrapped by Run's error for an id that Options.MapIDs
// would shift past the largest valid id (4294967294).
var ErrIDRange = errors.New("shifted past the largest id")

// ErrArchive is wrapped by Run's errors about what the archive says that
// cannot be extracted as said: two entries of one name, a hardlink to
// something that is no regular file extracted before it. Such an archive is
// damaged or hostile; errors.Is(err, pxar.ErrFormat) holds for them too.
var ErrArchive = errors.New("archive cannot be extracted as it says")

// archiveError is an ErrArchive error that matches pxar.ErrFormat too.
type archiveError struct{ msg string }

func (e *archiveError) Error() string { return e.msg }
func (e *archiveError) Is(target error) bool {
	return target == ErrArchive || target == pxar.ErrFormat
}

// FSError is a failure of the file system being written (no space,
// permission denied on the directory, a read-only file system): Path is
// the archive path of the entry, Op the call that failed.
type FSError struct {
	Path string
	Op   string
	Err  error
}

// Error quotes the path, which comes from the archive.
func (e *FSError) Error() string {
	return fmt.Sprintf("extract %s: %s: %v", strconv.Quote(e.Path), e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *FSError) Unwrap() error { return e.Err }

// Run extracts archive a into directory dir (created when absent, its
// parent must exist) as o says and reports what it wrote. Errors: the
// decoder's *pxar.Error (a malformed archive matches pxar.ErrFormat; a
// failed read of the archive carries the reader's error, a damaged chunk
// included) with the entry's path and stream offset; ErrArchive; ErrNotEmpty;
// ErrNotFound for an Include path the archive lacks; ErrIDRange; ErrBusy
// when another run holds dir's lock (an exclusive flock on dir, held for
// the run); *FSError for the file system written; ctx's error when it is
// done. The report counts what was written up to an error.
//
// With or without Include, the archive root's owner, mode and times are
// applied to dir itself (created by the run or not), except that its setuid and setgid bits are never set and
// group and other write permission only with the sticky bit (a warning
// says what was left out).
func Run(ctx context.Context, a *pxar.Archive, dir string, o Options) (*Report, error) {
	rep := &Report{}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return rep, &FSError{Path: ".", Op: "mkdir", Err: err}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return rep, &FSError{Path: ".", Op: "open " + dir, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return rep, fmt.Errorf("directory %s is %w", strconv.Quote(dir), ErrBusy)
		}
		return rep, &FSError{Path: ".", Op: "lock " + dir, Err: err}
	}
	if !o.Force {
		empty, err := isEmpty(fd)
		if err != nil {
			return rep, &FSError{Path: ".", Op: "read directory", Err: err}
		}
		if !empty {
			return rep, fmt.Errorf("%s: %w", strconv.Quote(dir), ErrNotEmpty)
		}
	}
	x := &extractor{ctx: ctx, a: a, o: o, rep: rep, top: fd, root: os.Geteuid() == 0,
		files: map[string]bool{}, made: map[string]bool{}, seen: map[string]bool{}}
	x.chown = x.root || o.SameOwner
	x.beneath = true
	defer x.restoreModes()
	restore, err := x.writable(fd, ".")
	if err != nil {
		return rep, err
	}
	x.restores = append(x.restores, restore)
	if len(o.Include) == 0 {
		root := a.Root()
		if err := x.contents(root, fd); err != nil {
			return rep, err
		}
		x.restoreModes()
		return rep, x.finish(root, fd, "")
	}
	for _, inc := range includes(o.Include) {
		if err := x.include(inc); err != nil {
			return rep, err
		}
	}
	// The directories above the included paths get their metadata last,
	// DIR itself the root's as a full extraction gives it.
	for i := len(x.parents) - 1; i >= 0; i-- {
		p := x.parents[i]
		if err := x.finishPath(p); err != nil {
			return rep, err
		}
	}
	x.restoreModes()
	return rep, x.finish(a.Root(), fd, "")
}

// includes returns the Include paths cleaned ("a/b", "" for the root),
// without duplicates and without those below another one, in order.
func includes(in []string) []string {
	var out []string
	for _, p := range in {
		out = append(out, path.Clean("/" + p)[1:])
	}
	sort.Strings(out)
	var kept []string
	for _, p := range out {
		under := false
		for _, k := range kept {
			if k == "" || p == k || strings.HasPrefix(p, k+"/") {
				under = true
			}
		}
		if !under {
			kept = append(kept, p)
		}
	}
	return kept
}

// isEmpty reports whether the directory open as fd has no entries.
func isEmpty(fd int) (bool, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}

// extractor is the state of one Run.
type extractor struct {
	ctx     context.Context
	a       *pxar.Archive
	o       Options
	rep     *Report
	top     int  // the directory extracted into
	root    bool // running as root
	chown   bool // set owners
	beneath bool // openat2 may be tried
	// files holds the archive paths of the regular files extracted, the
	// targets hardlinks may point to.
	files   map[string]bool
	parents []*pxar.Entry   // Include: directories created above the paths
	made    map[string]bool // their archive paths
	seen    map[string]bool // archive paths extracted
	bytes   atomic.Int64
	// restores give existing directories (DIR, those above Include
	// paths) their mode back: see writable.
	restores []func()
}

// restoreModes runs and drops x.restores, last first.
func (x *extractor) restoreModes() {
	for i := len(x.restores) - 1; i >= 0; i-- {
		x.restores[i]()
	}
	x.restores = nil
}

// writable gives the existing directory open as fd (archive path p) owner
// write and search permission for a Force run not made as root, when it
// lacks them and the caller owns it, so that entries can be replaced in
// it; the returned func gives it its mode back (and closes its own
// duplicate of fd). Otherwise it does nothing.
func (x *extractor) writable(fd int, p string) (func(), error) {
	noop := func() {}
	if x.root || !x.o.Force {
		return noop, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return noop, &FSError{Path: p, Op: "stat", Err: err}
	}
	const need = unix.S_IWUSR | unix.S_IXUSR
	if st.Mode&need == need || int(st.Uid) != os.Geteuid() {
		return noop, nil
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return noop, &FSError{Path: p, Op: "dup", Err: err}
	}
	mode := st.Mode & 0o7777
	if err := unix.Fchmod(dup, mode|need); err != nil {
		unix.Close(dup)
		return noop, &FSError{Path: p, Op: "chmod to replace entries", Err: err}
	}
	return func() {
		if err := unix.Fchmod(dup, mode); err != nil {
			x.warn("%s: mode %#o not given back: %v", strconv.Quote(p), mode, err)
		}
		unix.Close(dup)
	}, nil
}

func (x *extractor) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	x.rep.Warnings++
	if len(x.rep.WarningList) < MaxWarningsListed {
		x.rep.WarningList = append(x.rep.WarningList, msg)
	}
	if x.o.Warn != nil {
		x.o.Warn(msg)
	}
}

// mapID shifts id by MapIDs.
func (x *extractor) mapID(id uint32) uint32 {
	return id + x.o.MapIDs
}

// checkIDs fails when MapIDs carries an id of e past the largest valid one.
func (x *extractor) checkIDs(e *pxar.Entry) error {
	if x.o.MapIDs == 0 {
		return nil
	}
	ids := []uint64{uint64(e.UID), uint64(e.GID)}
	for _, l := range [][]pxar.ACLEntry{e.ACL.Users, e.ACL.Groups, e.ACL.DefaultUsers, e.ACL.DefaultGroups} {
		for _, a := range l {
			ids = append(ids, a.ID)
		}
	}
	for _, id := range ids {
		if id+uint64(x.o.MapIDs) >= math.MaxUint32 {
			return fmt.Errorf("%s: id %d shifted by %d: %w", strconv.Quote(e.Path), id, x.o.MapIDs, ErrIDRange)
		}
	}
	return nil
}

// openDir opens directory name in parent without following a symlink.
func (x *extractor) openDir(parent int, name string) (int, error) {
	if x.beneath {
		fd, err := unix.Openat2(parent, name, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return fd, err
		}
		x.beneath = false // no openat2 (old kernel, seccomp): one component at a time is as safe
	}
	return unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// contents extracts the entries of directory d, open as fd.
func (x *extractor) contents(d *pxar.Entry, fd int) error {
	return x.a.ReadDir(d, func(c *pxar.Entry) error { return x.entry(c, fd) })
}

// clear makes room for entry e at name in parent: nothing to do when the
// name is free; with Force an existing non-directory is removed, and an
// existing directory is kept when e is one (true: reuse it).
func (x *extractor) clear(e *pxar.Entry, parent int) (reuse bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(parent, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &FSError{Path: e.Path, Op: "stat", Err: err}
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if isDir && e.Kind == pxar.KindDir && x.made[e.Path] {
		return true, nil // created above an Include path
	}
	if x.seen[e.Path] {
		// Written by this run: the archive has the name twice.
		return false, &archiveError{fmt.Sprintf("%s (metadata stream offset %d): the archive holds two entries of this name", strconv.Quote(e.Path), e.Offset())}
	}
	if !x.o.Force {
		// The directory was empty and is locked: something outside
		// this run put it there.
		return false, &FSError{Path: e.Path, Op: "create (appeared during the extraction)", Err: unix.EEXIST}
	}
	if isDir && e.Kind == pxar.KindDir {
		return true, nil
	}
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(parent, e.Name, flags); err != nil {
		return false, &FSError{Path: e.Path, Op: "remove the existing entry", Err: err}
	}
	return false, nil
}

// entry extracts e (and, for a directory, everything below it) into the
// directory open as parent.
func (x *extractor) entry(e *pxar.Entry, parent int) error {
	if err := x.ctx.Err(); err != nil {
		return err
	}
	if err := x.checkIDs(e); err != nil {
		return err
	}
	reuse, err := x.clear(e, parent)
	if err != nil {
		return err
	}
	x.seen[e.Path] = true
	switch e.Kind {
	case pxar.KindDir:
		if !reuse {
			if err := unix.Mkdirat(parent, e.Name, 0o700); err != nil {
				return &FSError{Path: e.Path, Op: "mkdir", Err: err}
			}
		}
		fd, err := x.openDir(parent, e.Name)
		if err != nil {
			return &FSError{Path: e.Path, Op: "open directory", Err: err}
		}
		defer unix.Close(fd)
		x.rep.Dirs++
		restore := func() {}
		if reuse {
			if restore, err = x.writable(fd, e.Path); err != nil {
				return err
			}
		}
		err = x.contents(e, fd)
		restore()
		if err != nil {
			return err
		}
		return x.finish(e, fd, e.Path)
	case pxar.KindFile:
		return x.file(e, e, parent)
	case pxar.KindHardlink:
		return x.hardlink(e, parent)
	case pxar.KindSymlink:
		if err := unix.Symlinkat(e.LinkTarget, parent, e.Name); err != nil {
			return &FSError{Path: e.Path, Op: "symlink", Err: err}
		}
		x.rep.Symlinks++
		return x.finishAt(e, parent)
	case pxar.KindDevice, pxar.KindFIFO, pxar.KindSocket:
		if e.Kind == pxar.KindDevice && !x.root {
			x.warn("%s: device node (%d, %d) skipped: creating device nodes needs root", strconv.Quote(e.Path), e.Device.Major, e.Device.Minor)
			return nil
		}
		dev := unix.Mkdev(uint32(e.Device.Major), uint32(e.Device.Minor))
		if err := unix.Mknodat(parent, e.Name, uint32(e.Mode&unix.S_IFMT)|0o600, int(dev)); err != nil {
			return &FSError{Path: e.Path, Op: "mknod", Err: err}
		}
		x.rep.Specials++
		if x.o.afterCreate != nil {
			x.o.afterCreate(parent, e.Name)
		}
		return x.special(e, parent)
	}
	return &archiveError{fmt.Sprintf("%s: entry of unknown kind %v", strconv.Quote(e.Path), e.Kind)}
}

// copyBuf is the content buffer size.
const copyBuf = 1 << 20

// file writes regular file e (meta: whose metadata it gets; for a
// hardlink written as a copy, the target's) into parent.
func (x *extractor) file(e, meta *pxar.Entry, parent int) error {
	r, err := e.Open()
	if err != nil {
		return err
	}
	fd, err := unix.Openat(parent, e.Name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &FSError{Path: e.Path, Op: "create", Err: err}
	}
	f := os.NewFile(uintptr(fd), e.Name)
	defer f.Close()
	buf := make([]byte, min(copyBuf, max(int64(4096), r.Size())))
	var off int64
	hole := false
	for {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			b := buf[:n]
			if allZero(b) {
				hole = true // left as a hole: sparse files stay sparse
			} else if _, err := f.WriteAt(b, off); err != nil {
				return &FSError{Path: e.Path, Op: fmt.Sprintf("write at %d", off), Err: unwrapPath(err)}
			}
			off += int64(n)
			x.rep.Bytes += int64(n)
			if x.o.Progress != nil {
				x.o.Progress(x.bytes.Add(int64(n)))
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return rerr // the decoder's error: path and offset
		}
	}
	if off != r.Size() {
		return &archiveError{fmt.Sprintf("%s: %d of %d content bytes read", strconv.Quote(e.Path), off, r.Size())}
	}
	if hole {
		if err := f.Truncate(off); err != nil {
			return &FSError{Path: e.Path, Op: "truncate", Err: unwrapPath(err)}
		}
	}
	x.rep.Files++
	x.files[e.Path] = true
	n := node{fd: fd}
	if err := x.attrs(meta, e.Path, n, 0); err != nil {
		return err
	}
	return x.times(meta, e.Path, n)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// unwrapPath drops an *os.PathError's file name (the bare entry name).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// hardlink links e to its target, a regular file extracted before it; a
// target outside the Include paths is written as a copy instead.
func (x *extractor) hardlink(e *pxar.Entry, parent int) error {
	t := e.LinkTarget
	if !x.files[t] {
		if len(x.o.Include) == 0 {
			return &archiveError{fmt.Sprintf("%s: hardlink to %s, which is no regular file extracted before it", strconv.Quote(e.Path), strconv.Quote(t))}
		}
		target, err := x.a.HardlinkTarget(e)
		if err != nil {
			return err
		}
		return x.file(e, target, parent)
	}
	dir, name := path.Split(t)
	dfd, err := x.walk(strings.TrimSuffix(dir, "/"), e.Path)
	if err != nil {
		return err
	}
	if dfd != x.top {
		defer unix.Close(dfd)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &archiveError{fmt.Sprintf("%s: hardlink target %s is no longer a regular file", strconv.Quote(e.Path), strconv.Quote(t))}
	}
	if err := unix.Linkat(dfd, name, parent, e.Name, 0); err != nil {
		return &FSError{Path: e.Path, Op: "link to " + strconv.Quote(t), Err: err}
	}
	x.rep.Hardlinks++
	return nil
}

// walk opens directory p (an archive path; "" the top) below the top
// directory, one component at a time without following symlinks. The
// caller closes the result unless it is x.top.
func (x *extractor) walk(p, who string) (int, error) {
	fd := x.top
	if p == "" || p == "." {
		return fd, nil
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == "" || c == "." || c == ".." {
			return -1, &archiveError{fmt.Sprintf("%s: path %s leaves the directory", strconv.Quote(who), strconv.Quote(p))}
		}
		next, err := x.openDir(fd, c)
		if fd != x.top {
			unix.Close(fd)
		}
		if err != nil {
			return -1, &FSError{Path: who, Op: "open " + strconv.Quote(p), Err: err}
		}
		fd = next
	}
	return fd, nil
}

// node is how the metadata calls reach an entry: through an open
// descriptor fd (a regular file, a directory; with opath an O_PATH
// descriptor of a device node, FIFO or socket, reached for the calls that
// need an open file through /proc/self/fd, which names that inode and no
// other), or for a symlink by name in dirfd without following it. No
// call follows a symlink.
type node struct {
	fd    int
	opath bool
	dirfd int
	name  string
}

// proc is the /proc/self/fd path of n's O_PATH descriptor.
func (n node) proc() string { return fmt.Sprintf("/proc/self/fd/%d", n.fd) }

func (n node) chown(uid, gid int) error {
	if n.fd >= 0 {
		return unix.Fchownat(n.fd, "", uid, gid, unix.AT_EMPTY_PATH)
	}
	return unix.Fchownat(n.dirfd, n.name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}

func (n node) chmod(mode uint32) error {
	if n.opath {
		return unix.Chmod(n.proc(), mode)
	}
	return unix.Fchmod(n.fd, mode) // symlinks have no mode: never called
}

func (n node) setxattr(attr string, v []byte) error {
	if n.opath {
		return unix.Setxattr(n.proc(), attr, v, 0)
	}
	return unix.Fsetxattr(n.fd, attr, v, 0) // symlinks: never called
}

func (n node) utimes(tt []unix.Timespec) error {
	if n.fd >= 0 {
		return unix.UtimesNanoAt(n.fd, "", tt, unix.AT_EMPTY_PATH)
	}
	return unix.UtimesNanoAt(n.dirfd, n.name, tt, unix.AT_SYMLINK_NOFOLLOW)
}

// finishAt sets the metadata of symlink e, name e.Name in parent.
func (x *extractor) finishAt(e *pxar.Entry, parent int) error {
	n := node{fd: -1, dirfd: parent, name: e.Name}
	if err := x.attrs(e, e.Path, n, 0); err != nil {
		return err
	}
	return x.times(e, e.Path, n)
}

// special sets the metadata of device node, FIFO or socket e, name e.Name
// in parent, just created: through an O_PATH|O_NOFOLLOW descriptor, after
// checking it is still of e's type (an entry replaced by a symlink in the
// meantime is refused, never followed).
func (x *extractor) special(e *pxar.Entry, parent int) error {
	fd, err := unix.Openat(parent, e.Name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &FSError{Path: e.Path, Op: "open", Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &FSError{Path: e.Path, Op: "stat", Err: err}
	}
	if st.Mode&unix.S_IFMT != uint32(e.Mode&unix.S_IFMT) {
		return &FSError{Path: e.Path, Op: "set metadata", Err: errors.New("replaced by something else during the extraction")}
	}
	n := node{fd: fd, opath: true}
	if err := x.attrs(e, e.Path, n, 0); err != nil {
		return err
	}
	return x.times(e, e.Path, n)
}

// dirModeMask are the mode bits of the archive root never applied to the
// directory extracted into.
const dirModeMask = unix.S_ISUID | unix.S_ISGID

// finish sets directory e's metadata (fd open on it) once its contents are
// written; p is its archive path ("" the top directory, which gets e's mode
// without setuid and setgid, and without group and other write permission
// unless sticky).
func (x *extractor) finish(e *pxar.Entry, fd int, p string) error {
	var drop uint32
	if p == "" {
		p = "."
		mode := uint32(e.Mode & 0o7777)
		drop = mode & dirModeMask
		if mode&unix.S_ISVTX == 0 {
			drop |= mode & (unix.S_IWGRP | unix.S_IWOTH)
		}
		if drop != 0 {
			x.warn("the archive root's mode %#o applied to the directory without %#o (no setuid or setgid, no group or other write without the sticky bit)", mode, drop)
		}
	}
	n := node{fd: fd}
	if err := x.attrs(e, p, n, drop); err != nil {
		return err
	}
	return x.times(e, p, n)
}

// xattrWarn are the setxattr errors that make an attribute a warning, not
// a failure: not supported or not allowed, and a value or set of values
// the file system cannot hold (as GNU tar); a full disk still fails the
// content writes.
var xattrWarn = []error{unix.ENOTSUP, unix.EPERM, unix.EACCES, unix.ENOSPC, unix.E2BIG, unix.ERANGE}

// attrs sets owner, mode (without the bits in drop), ACLs, xattrs and
// capabilities of e, reached as n.
func (x *extractor) attrs(e *pxar.Entry, p string, n node, drop uint32) error {
	if x.chown {
		uid, gid := int(x.mapID(e.UID)), int(x.mapID(e.GID))
		if err := n.chown(uid, gid); err != nil {
			if !x.root {
				x.warn("%s: owner %d:%d not set: %v", strconv.Quote(p), uid, gid, err)
			} else {
				return &FSError{Path: p, Op: "chown", Err: err}
			}
		}
	}
	if e.Kind == pxar.KindSymlink {
		return nil // no mode; symlinks carry no user xattrs or ACLs
	}
	if err := n.chmod(uint32(e.Mode&0o7777) &^ drop); err != nil {
		return &FSError{Path: p, Op: "chmod", Err: err}
	}
	set := func(attr string, v []byte) error {
		err := n.setxattr(attr, v)
		if err == nil {
			return nil
		}
		for _, w := range xattrWarn {
			if errors.Is(err, w) {
				x.warn("%s: extended attribute %s (%d bytes) not set: %v", strconv.Quote(p), strconv.Quote(attr), len(v), err)
				return nil
			}
		}
		return &FSError{Path: p, Op: "set extended attribute " + strconv.Quote(attr), Err: err}
	}
	for _, xa := range e.Xattrs {
		n := string(xa.Name)
		if n == xattrACLAccess || n == xattrACLDefault || n == xattrCaps {
			continue // from the ACL and FCaps items only
		}
		if err := set(n, xa.Value); err != nil {
			return err
		}
	}
	if v := e.ACL.AccessXattr(e.Mode, x.mapID); v != nil {
		if err := set(xattrACLAccess, v); err != nil {
			return err
		}
	}
	if e.Kind == pxar.KindDir {
		if v := e.ACL.DefaultXattr(x.mapID); v != nil {
			if err := set(xattrACLDefault, v); err != nil {
				return err
			}
		}
	}
	if e.FCaps != nil && e.Kind == pxar.KindFile {
		if err := set(xattrCaps, mapCaps(e.FCaps, x.mapID)); err != nil {
			return err
		}
	}
	return nil
}

// times sets e's modification time (and its access time to the same).
func (x *extractor) times(e *pxar.Entry, p string, n node) error {
	ts := unix.Timespec{Sec: e.MTimeSec, Nsec: int64(e.MTimeNsec)}
	if err := n.utimes([]unix.Timespec{ts, ts}); err != nil {
		return &FSError{Path: p, Op: "set times", Err: err}
	}
	return nil
}

// include extracts archive path inc and everything below it, creating the
// directories above it.
func (x *extractor) include(inc string) error {
	clean := inc
	if clean == "" {
		return x.contents(x.a.Root(), x.top) // DIR's metadata: see Run
	}
	// The directories above: created (or reused) one by one.
	fd := x.top
	dir := x.a.Root()
	comps := strings.Split(clean, "/")
	for i, c := range comps {
		e, err := x.a.Lookup(dir, c)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--include %s: %w", strconv.Quote(inc), ErrNotFound)
		}
		if err != nil {
			return err
		}
		if i == len(comps)-1 {
			err := x.entry(e, fd)
			if fd != x.top {
				unix.Close(fd)
			}
			return err
		}
		if e.Kind != pxar.KindDir {
			return fmt.Errorf("--include %s: %s is a %s: %w", strconv.Quote(inc), strconv.Quote(e.Path), e.Kind, ErrNotFound)
		}
		next, err := x.parent(e, fd)
		if fd != x.top {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
		fd, dir = next, e
	}
	if fd != x.top {
		unix.Close(fd)
	}
	return nil
}

// parent opens directory e, above an Include path, in the directory open
// as fd: created when absent (to get e's metadata at the end); with Force
// an existing non-directory is replaced by it, never followed, and an
// existing directory is made writable for the run (see writable).
func (x *extractor) parent(e *pxar.Entry, fd int) (int, error) {
	var st unix.Stat_t
	err := unix.Fstatat(fd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR && x.o.Force {
		if err := unix.Unlinkat(fd, e.Name, 0); err != nil {
			return -1, &FSError{Path: e.Path, Op: "remove the existing entry", Err: err}
		}
		err = unix.ENOENT
	}
	made := false
	switch {
	case errors.Is(err, unix.ENOENT):
		if err := unix.Mkdirat(fd, e.Name, 0o700); err != nil {
			return -1, &FSError{Path: e.Path, Op: "mkdir", Err: err}
		}
		x.parents = append(x.parents, e)
		x.made[e.Path] = true
		x.rep.Dirs++
		made = true
	case err != nil:
		return -1, &FSError{Path: e.Path, Op: "stat", Err: err}
	}
	next, err := x.openDir(fd, e.Name)
	if err != nil {
		return -1, &FSError{Path: e.Path, Op: "open directory", Err: err}
	}
	if !made && !x.made[e.Path] {
		restore, err := x.writable(next, e.Path)
		if err != nil {
			unix.Close(next)
			return -1, err
		}
		x.restores = append(x.restores, restore)
	}
	return next, nil
}

// finishPath sets the metadata of directory e, created above an Include
// path.
func (x *extractor) finishPath(e *pxar.Entry) error {
	fd, err := x.walk(e.Path, e.Path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return x.finish(e, fd, e.Path)
}
