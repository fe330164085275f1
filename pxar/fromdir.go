package pxar

import (
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
// order. Extended attributes, ACLs, fcaps and quota project IDs are not
// read. Errors name the path.
func TreeFromDir(root string) (*Node, error) {
	n, err := nodeFromPath(root, "", 0)
	if err != nil {
		return nil, err
	}
	if n.Kind != KindDir {
		return nil, fmt.Errorf("pxar: %s is not a directory", root)
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
	return n, nil
}

func nodeFromPath(full, name string, depth int) (*Node, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("pxar: %s: deeper than %d levels", full, MaxDepth)
	}
	var st unix.Stat_t
	if err := unix.Lstat(full, &st); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: full, Err: err}
	}
	n := &Node{Name: name, Metadata: Metadata{
		Mode: uint64(st.Mode), UID: st.Uid, GID: st.Gid,
		MTimeSec: st.Mtim.Sec, MTimeNsec: uint32(st.Mtim.Nsec),
	}}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		n.Kind = KindDir
		ents, err := os.ReadDir(full)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			c, err := nodeFromPath(filepath.Join(full, e.Name()), e.Name(), depth+1)
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
	case unix.S_IFREG:
		n.Kind, n.Size = KindFile, uint64(st.Size)
		n.dev, n.ino, n.nlink = st.Dev, st.Ino, uint64(st.Nlink)
		n.Content = func() (io.ReadCloser, error) { return os.Open(full) }
	case unix.S_IFLNK:
		t, err := os.Readlink(full)
		if err != nil {
			return nil, err
		}
		n.Kind, n.LinkTarget = KindSymlink, t
	case unix.S_IFCHR, unix.S_IFBLK:
		n.Kind = KindDevice
		n.Device = Device{uint64(unix.Major(st.Rdev)), uint64(unix.Minor(st.Rdev))}
	case unix.S_IFIFO:
		n.Kind = KindFIFO
	case unix.S_IFSOCK:
		n.Kind = KindSocket
	default:
		return nil, fmt.Errorf("pxar: %s: unknown file type %#o", full, st.Mode&unix.S_IFMT)
	}
	return n, nil
}
