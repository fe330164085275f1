package pxar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// TreeFromDir describes the directory tree at root for Encode, with
// Lstat (symlinks are not followed): mode, owner, mtime, symlink targets,
// device numbers, and regular files opened only when encoded (their size
// is the one Lstat saw: a file that shrank since fails the encoding, one
// that grew is cut at that size; ErrFileChanged).
// Files with several links become hardlinks to the first one in archive
// order. It is TreeFromDirStats without the counts.
func TreeFromDir(root string) (*Node, error) {
	return TreeFromDirStats(root, nil)
}

// ErrNotDir is returned (wrapped, naming the path) by TreeFromDirStats for
// a root that is not a directory.
var ErrNotDir = errors.New("not a directory")

// TreeFromDirStats is TreeFromDir that also reads each entry's extended
// attributes (user.*, trusted.*, security.NTACL: see keepXattr), POSIX
// access and default ACLs, file capabilities (regular files) and quota
// project ID (directories and regular files, where the file system keeps
// one), none of them for symlinks, and adds their counts to st (nil:
// not counted). Metadata that cannot be read is counted in st.Unread and left
// out; the entry is kept. A symlink given as root is followed (that one
// only, as proxmox-backup-client does with its source path); a root that
// is not a directory is ErrNotDir. It stays on the root's file system
// (TreeFromDirOpts without options). Errors name the path.
func TreeFromDirStats(root string, st *TreeStats) (*Node, error) {
	return TreeFromDirOpts(root, DirOptions{}, st)
}

// FileID identifies a file by device and inode number, as stat gives them.
type FileID struct{ Dev, Ino uint64 }

// DirOptions say where TreeFromDirOpts stops.
type DirOptions struct {
	// IncludeDev lists paths whose file systems (their st_dev) are read
	// too, as proxmox-backup-client's --include-dev: a directory on a
	// device other than the root's and these is stored as an empty
	// directory (its own metadata kept) and counted in TreeStats.OtherFS.
	IncludeDev []string
	// Skip lists files left out of the tree altogether (a datastore
	// inside the directory backed up), counted in TreeStats.Skipped.
	Skip []FileID
}

// TreeFromDirOpts is TreeFromDirStats that stays on the root's file system
// (and those of o.IncludeDev) and leaves out o.Skip. An IncludeDev path
// that cannot be stat'ed is an error naming it.
func TreeFromDirOpts(root string, o DirOptions, st *TreeStats) (*Node, error) {
	if st == nil {
		st = new(TreeStats)
	}
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			return nil, fmt.Errorf("pxar: %s: %w", root, err)
		}
		root = r
	}
	var rs unix.Stat_t
	if err := unix.Stat(root, &rs); err != nil {
		return nil, &os.PathError{Op: "stat", Path: root, Err: err}
	}
	w := &dirWalk{st: st, devs: map[uint64]bool{rs.Dev: true}, skip: map[FileID]bool{}}
	for _, p := range o.IncludeDev {
		var ds unix.Stat_t
		if err := unix.Stat(p, &ds); err != nil {
			return nil, &os.PathError{Op: "stat", Path: p, Err: err}
		}
		w.devs[ds.Dev] = true
	}
	for _, id := range o.Skip {
		w.skip[id] = true
	}
	n, err := w.node(root, "", 0)
	if err != nil {
		return nil, err
	}
	if n.Kind != KindDir {
		return nil, fmt.Errorf("pxar: %s: %w", root, ErrNotDir)
	}
	type inode struct{ dev, ino uint64 }
	first := map[inode]string{}
	var link func(n *Node, p string)
	link = func(n *Node, p string) {
		slices.SortFunc(n.Children, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
		for _, c := range n.Children {
			cp := path.Join(p, c.Name)
			if c.Kind == KindFile && c.nlink > 1 {
				k := inode{c.dev, c.ino}
				if t, ok := first[k]; ok {
					*c = Node{Name: c.Name, Kind: KindHardlink, LinkTarget: t}
				} else {
					first[k] = cp
				}
			}
			link(c, cp)
		}
	}
	link(n, "")
	st.count(n)
	return n, nil
}

// dirWalk is one TreeFromDirOpts walk: the counts, the devices read and
// the files left out.
type dirWalk struct {
	st   *TreeStats
	devs map[uint64]bool
	skip map[FileID]bool
}

func (w *dirWalk) node(full, name string, depth int) (*Node, error) {
	st := w.st
	if depth > MaxDepth {
		return nil, fmt.Errorf("pxar: %s: deeper than %d levels", full, MaxDepth)
	}
	var sb unix.Stat_t
	if err := unix.Lstat(full, &sb); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: full, Err: err}
	}
	n := &Node{Name: name, Metadata: Metadata{
		Mode: uint64(sb.Mode), UID: sb.Uid, GID: sb.Gid,
		MTimeSec: sb.Mtim.Sec, MTimeNsec: uint32(sb.Mtim.Nsec),
	}}
	switch sb.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		n.Kind = KindDir
		if !w.devs[uint64(sb.Dev)] {
			st.otherFS(full)
			break
		}
		ents, err := os.ReadDir(full)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			cp := filepath.Join(full, e.Name())
			if len(w.skip) > 0 {
				var cs unix.Stat_t
				if err := unix.Lstat(cp, &cs); err == nil && w.skip[FileID{uint64(cs.Dev), cs.Ino}] {
					st.skipped(cp)
					continue
				}
			}
			c, err := w.node(cp, e.Name(), depth+1)
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
	case unix.S_IFREG:
		n.Kind, n.Size = KindFile, uint64(sb.Size)
		n.dev, n.ino, n.nlink = sb.Dev, sb.Ino, uint64(sb.Nlink)
		size := n.Size
		n.Content = func() (io.ReadCloser, error) {
			f, err := os.Open(full)
			if err != nil {
				return nil, err
			}
			return &sizedFile{File: f, left: size}, nil
		}
	case unix.S_IFLNK:
		t, err := os.Readlink(full)
		if err != nil {
			return nil, err
		}
		n.Kind, n.LinkTarget = KindSymlink, t
	case unix.S_IFCHR, unix.S_IFBLK:
		n.Kind = KindDevice
		n.Device = Device{uint64(unix.Major(sb.Rdev)), uint64(unix.Minor(sb.Rdev))}
	case unix.S_IFIFO:
		n.Kind = KindFIFO
	case unix.S_IFSOCK:
		n.Kind = KindSocket
	default:
		return nil, fmt.Errorf("pxar: %s: unknown file type %#o", full, sb.Mode&unix.S_IFMT)
	}
	readMeta(full, n, st)
	return n, nil
}

// ErrFileChanged is wrapped by the encoding error of a regular file
// TreeFromDir found shorter than when it was listed (a file changing
// during the backup, or one whose stat size is not its content's, as in
// /sys); the error names the file and both sizes.
var ErrFileChanged = errors.New("file changed during the backup")

// sizedFile reads a file expected to hold left more bytes: an end before
// that is ErrFileChanged.
type sizedFile struct {
	*os.File
	left uint64
	read uint64
}

func (f *sizedFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.read += uint64(n)
	f.left -= min(f.left, uint64(n))
	if err == io.EOF && f.left > 0 {
		return n, fmt.Errorf("%s: %w: %d bytes read, %d when listed", strconv.Quote(f.Name()), ErrFileChanged, f.read, f.read+f.left)
	}
	return n, err
}
