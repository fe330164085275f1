package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Attr is what a tree node shows as its attributes.
type Attr struct {
	// Mode is the st_mode: file type bits (syscall.S_IFDIR, S_IFREG,
	// S_IFLNK, S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK) and permission bits.
	Mode uint32
	// Ino identifies the node within its tree: nodes with the same Ino
	// are one inode (hard links). It must be nonzero and below 2^48;
	// fusefs makes it unique within the mount.
	Ino uint64
	// Nlink is the link count; 0 shows 1.
	Nlink    uint32
	UID, GID uint32
	// Size is a regular file's length in bytes (a symlink's: its target's).
	Size int64
	// Major and Minor are a device node's numbers.
	Major, Minor uint32
	// MTime is shown as the modification, change and access time.
	MTime time.Time
}

// Xattr is one extended attribute: its full name ("user.comment",
// "system.posix_acl_access") and value.
type Xattr struct {
	Name  string
	Value []byte
}

// Node is one entry of a tree served lazily (see File.Node). A node
// that implements none of DirNode, FileNode or SymlinkNode has no
// content (device nodes, FIFOs, sockets: their type is in Attr.Mode).
// Methods must be safe for concurrent use. Errors matching
// fs.ErrNotExist show as ENOENT; others as EIO, logged as Options.Log says.
type Node interface {
	// Attr returns the node's attributes; it must not change.
	Attr() Attr
	// Xattrs returns the node's extended attributes (nil: none).
	Xattrs() ([]Xattr, error)
}

// DirNode is a directory (Attr.Mode has S_IFDIR).
type DirNode interface {
	Node
	// Lookup returns the entry name of the directory, or an error
	// matching fs.ErrNotExist.
	Lookup(name string) (Node, error)
	// ReadDir returns all entries of the directory.
	ReadDir() ([]DirEntry, error)
}

// DirEntry is one entry of a DirNode.
type DirEntry struct {
	Name string
	Node Node
}

// FileNode is a regular file (Attr.Mode has S_IFREG) of Attr().Size bytes.
type FileNode interface {
	Node
	// Open returns the reader of the content, called at each open(2); it
	// must be safe for concurrent use.
	Open() (io.ReaderAt, error)
}

// SymlinkNode is a symbolic link (Attr.Mode has S_IFLNK).
type SymlinkNode interface {
	Node
	// Readlink returns the link's target.
	Readlink() (string, error)
}

// inoBits is the width of a tree node's Ino; the File's index above it
// makes it unique in the mount.
const inoBits = 48

// treeNode serves a Node of the tree of File number tree.
type treeNode struct {
	gofs.Inode
	n    Node
	tree uint64
	name string // for log lines
	log  func(string)

	mu   sync.Mutex
	kids map[string]Node // from the last ReadDir, for readdirplus' lookups
}

var (
	_ = (gofs.NodeGetattrer)((*treeNode)(nil))
	_ = (gofs.NodeLookuper)((*treeNode)(nil))
	_ = (gofs.NodeReaddirer)((*treeNode)(nil))
	_ = (gofs.NodeOpener)((*treeNode)(nil))
	_ = (gofs.NodeReadlinker)((*treeNode)(nil))
	_ = (gofs.NodeGetxattrer)((*treeNode)(nil))
	_ = (gofs.NodeListxattrer)((*treeNode)(nil))
)

// stable is the go-fuse identity of node n of tree number tree.
func stable(tree uint64, n Node) gofs.StableAttr {
	a := n.Attr()
	return gofs.StableAttr{Mode: a.Mode & syscall.S_IFMT, Ino: tree<<inoBits | a.Ino&(1<<inoBits-1)}
}

// errno maps a Node's error to an errno, logging those that are not
// ENOENT unless logged already.
func (t *treeNode) errno(op string, err error) syscall.Errno {
	if errors.Is(err, fs.ErrNotExist) {
		return syscall.ENOENT
	}
	var l LoggedError
	if t.log != nil && !(errors.As(err, &l) && l.Logged()) {
		t.log(fmt.Sprintf("%s: %s: %v", t.name, op, err))
	}
	return syscall.EIO
}

func fillAttr(tree uint64, a Attr, out *fuse.Attr) {
	out.Mode = a.Mode
	out.Ino = tree<<inoBits | a.Ino&(1<<inoBits-1)
	out.Nlink = max(a.Nlink, 1)
	out.Owner = fuse.Owner{Uid: a.UID, Gid: a.GID}
	out.Size = uint64(max(a.Size, 0))
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 4096
	// The kernel's 32-bit device encoding (new_encode_dev).
	out.Rdev = a.Minor&0xff | a.Major<<8 | (a.Minor&^0xff)<<12
	t := a.MTime
	out.SetTimes(&t, &t, &t)
}

// Getattr reports the node's Attr.
func (t *treeNode) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillAttr(t.tree, t.n.Attr(), &out.Attr)
	return gofs.OK
}

// Lookup finds a directory's entry, from the last listing when it holds it.
func (t *treeNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	d, ok := t.n.(DirNode)
	if !ok {
		return nil, syscall.ENOTDIR
	}
	t.mu.Lock()
	c := t.kids[name]
	t.mu.Unlock()
	if c == nil {
		var err error
		if c, err = d.Lookup(name); err != nil {
			return nil, t.errno("lookup "+name, err)
		}
	}
	fillAttr(t.tree, c.Attr(), &out.Attr)
	child := &treeNode{n: c, tree: t.tree, name: t.name + "/" + name, log: t.log}
	return t.NewInode(ctx, child, stable(t.tree, c)), gofs.OK
}

// Readdir lists a directory, keeping its entries for the lookups of
// readdirplus.
func (t *treeNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	d, ok := t.n.(DirNode)
	if !ok {
		return nil, syscall.ENOTDIR
	}
	ents, err := d.ReadDir()
	if err != nil {
		return nil, t.errno("readdir", err)
	}
	list := make([]fuse.DirEntry, 0, len(ents))
	kids := make(map[string]Node, len(ents))
	for _, e := range ents {
		st := stable(t.tree, e.Node)
		list = append(list, fuse.DirEntry{Name: e.Name, Mode: st.Mode, Ino: st.Ino})
		kids[e.Name] = e.Node
	}
	t.mu.Lock()
	t.kids = kids
	t.mu.Unlock()
	return gofs.NewListDirStream(list), gofs.OK
}

// readerHandle is an open regular file of a tree.
type readerHandle struct{ r io.ReaderAt }

// Open opens a regular file for reading.
func (t *treeNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	f, ok := t.n.(FileNode)
	if !ok {
		if _, dir := t.n.(DirNode); dir {
			return nil, 0, gofs.OK
		}
		return nil, 0, syscall.EINVAL
	}
	r, err := f.Open()
	if err != nil {
		return nil, 0, t.errno("open", err)
	}
	return &readerHandle{r}, fuse.FOPEN_KEEP_CACHE, gofs.OK
}

// Read reads from an open regular file; a failure is EIO for this read.
func (t *treeNode) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := fh.(*readerHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	size := t.n.Attr().Size
	if off >= size {
		return fuse.ReadResultData(nil), gofs.OK
	}
	dest = dest[:min(int64(len(dest)), size-off)]
	k, err := h.r.ReadAt(dest, off)
	if err != nil && !(errors.Is(err, io.EOF) && k == len(dest)) {
		return nil, t.errno(fmt.Sprintf("read of %d bytes at %d", len(dest), off), err)
	}
	return fuse.ReadResultData(dest[:k]), gofs.OK
}

var _ = (gofs.NodeReader)((*treeNode)(nil))

// Readlink returns a symlink's target.
func (t *treeNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	s, ok := t.n.(SymlinkNode)
	if !ok {
		return nil, syscall.EINVAL
	}
	target, err := s.Readlink()
	if err != nil {
		return nil, t.errno("readlink", err)
	}
	return []byte(target), gofs.OK
}

// Getxattr returns one extended attribute (ENODATA when absent; ERANGE
// with the size when dest is too small, which go-fuse turns into the
// size answer of a size query).
func (t *treeNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	xs, err := t.n.Xattrs()
	if err != nil {
		return 0, t.errno("getxattr", err)
	}
	for _, x := range xs {
		if x.Name == attr {
			if len(dest) < len(x.Value) {
				return uint32(len(x.Value)), syscall.ERANGE
			}
			return uint32(copy(dest, x.Value)), gofs.OK
		}
	}
	return 0, syscall.ENODATA
}

// Listxattr lists the names of the extended attributes, each ended by
// a NUL.
func (t *treeNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	xs, err := t.n.Xattrs()
	if err != nil {
		return 0, t.errno("listxattr", err)
	}
	var b []byte
	for _, x := range xs {
		b = append(append(b, x.Name...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), syscall.ERANGE
	}
	return uint32(copy(dest, b)), gofs.OK
}
