package pxar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// TreeFromDir describes the directory tree at root for Encode, with
// Lstat (symlinks are not followed): mode, owner, mtime, symlink targets,
// device numbers, and regular files opened only when encoded (their size
// is the one Lstat saw: a file that shrank since fails the encoding, one
// that grew is cut at that size).
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
// is not a directory is ErrNotDir. Errors name the path.
func TreeFromDirStats(root string, st *TreeStats) (*Node, error) {
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
	n, err := nodeFromPath(root, "", 0, st)
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

func nodeFromPath(full, name string, depth int, st *TreeStats) (*Node, error) {
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
		ents, err := os.ReadDir(full)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			c, err := nodeFromPath(filepath.Join(full, e.Name()), e.Name(), depth+1, st)
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
	case unix.S_IFREG:
		n.Kind, n.Size = KindFile, uint64(sb.Size)
		n.dev, n.ino, n.nlink = sb.Dev, sb.Ino, uint64(sb.Nlink)
		n.Content = func() (io.ReadCloser, error) { return os.Open(full) }
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
