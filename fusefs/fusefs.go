// Package fusefs mounts a read-only FUSE file system (github.com/hanwen/go-fuse/v2)
// showing a flat directory of files, each served by an io.ReaderAt with a
// fixed size, or a directory tree served lazily through the Node
// interfaces (directories listed and looked up on demand, symlinks,
// device nodes, extended attributes). Contents never change, so the kernel may cache them (page
// cache, attributes and names without expiry). A read the ReaderAt fails
// returns EIO for that read only, and is logged unless the ReaderAt logged
// it already (see Options.Log). The package knows nothing of what it serves.
package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// File is one file of the mount.
type File struct {
	// Name is the file's name in the mount's root directory (no '/').
	Name string
	// Size is its length in bytes.
	Size int64
	// Data serves its reads; it must be safe for concurrent use.
	Data io.ReaderAt
	// ModTime is shown as its modification time.
	ModTime time.Time
	// Node, when set, serves the entry instead (Size, Data and ModTime
	// are then unused): a tree, typically a DirNode, looked up and
	// listed lazily.
	Node Node
}

// Options tune a mount. Zero values pick defaults.
type Options struct {
	// FsName is shown as the mount's source in /proc/mounts and df; default "fusefs".
	FsName string
	// AllowOther lets users other than the mounting one read the mount
	// (needs user_allow_other in /etc/fuse.conf unless root mounts).
	AllowOther bool
	// Log, if set, receives failed reads, one line each, except those
	// whose error (or an error it wraps) is a LoggedError whose Logged
	// reports true: the ReaderAt has logged them itself (an archive reader
	// logs each damaged chunk once, however many reads fail on it).
	Log func(msg string)
}

// LoggedError is implemented by read errors that their ReaderAt has logged
// already; Logged reports whether it did.
type LoggedError interface {
	Logged() bool
}

// Mount is a mounted file system.
type Mount struct {
	server *fuse.Server
	dir    string
}

// ErrUnavailable is wrapped by Mount's error when FUSE cannot be used here
// (no /dev/fuse, or no fusermount3 for an unprivileged user).
var ErrUnavailable = errors.New("FUSE is not available")

// New mounts files read-only at dir, an existing directory, and returns
// once the mount is ready. Unmount it with Unmount.
func New(dir string, files []File, opts Options) (*Mount, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("%w: %v (load the fuse module, or give the container /dev/fuse)", ErrUnavailable, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if f.Name == "" || f.Name == "." || f.Name == ".." || containsSlash(f.Name) || seen[f.Name] {
			return nil, fmt.Errorf("fusefs: bad or repeated file name %q", f.Name)
		}
		seen[f.Name] = true
	}
	forever := 365 * 24 * time.Hour
	name := opts.FsName
	if name == "" {
		name = "fusefs"
	}
	root := &root{files: files, log: opts.Log}
	server, err := fs.Mount(dir, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:    opts.AllowOther,
			Options:       []string{"ro", "default_permissions"},
			FsName:        name,
			Name:          "pbsdirect",
			MaxWrite:      1 << 20,
			MaxReadAhead:  1 << 20,
			MaxBackground: 64,
		},
		EntryTimeout: &forever,
		AttrTimeout:  &forever,
	})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENODEV) {
			return nil, fmt.Errorf("%w: mount %s: %v", ErrUnavailable, dir, err)
		}
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	return &Mount{server: server, dir: dir}, nil
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == 0 {
			return true
		}
	}
	return false
}

// Wait returns when the file system is unmounted (by Unmount, or from
// outside with umount or fusermount3 -u).
func (m *Mount) Wait() { m.server.Wait() }

// Unmount unmounts the file system; it fails while files of it are open
// (EBUSY), as umount does. It returns nil when the directory is no longer
// a FUSE mount point though the unmount reported a failure (fusermount3
// killed after it unmounted, by a signal sent to the process group).
func (m *Mount) Unmount() error {
	err := m.server.Unmount()
	if err != nil && m.gone() {
		return nil
	}
	return err
}

// root is the mount's directory: one persistent inode per file.
type root struct {
	fs.Inode
	files []File
	log   func(string)
}

var _ = (fs.NodeOnAdder)((*root)(nil))

// OnAdd builds the directory when the root is attached.
func (r *root) OnAdd(ctx context.Context) {
	for i := range r.files {
		f := &r.files[i]
		if f.Node != nil {
			tree := uint64(i) + 1
			ch := r.NewPersistentInode(ctx, &treeNode{n: f.Node, tree: tree, name: f.Name, log: r.log}, stable(tree, f.Node))
			r.AddChild(f.Name, ch, true)
			continue
		}
		ch := r.NewPersistentInode(ctx, &file{f: f, log: r.log}, fs.StableAttr{Mode: fuse.S_IFREG, Ino: uint64(i) + 2})
		r.AddChild(f.Name, ch, true)
	}
}

// file serves one File.
type file struct {
	fs.Inode
	f   *File
	log func(string)
}

var (
	_ = (fs.NodeGetattrer)((*file)(nil))
	_ = (fs.NodeOpener)((*file)(nil))
	_ = (fs.NodeReader)((*file)(nil))
)

// Getattr reports size, mode 0444 and times.
func (n *file) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = fuse.S_IFREG | 0o444
	out.Nlink = 1
	out.Size = uint64(n.f.Size)
	out.Blocks = (uint64(n.f.Size) + 511) / 512
	out.Blksize = 4096
	t := n.f.ModTime
	out.SetTimes(&t, &t, &t)
	return fs.OK
}

// Open allows reading only and lets the kernel keep cached pages.
func (n *file) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, fs.OK
}

// Read reads from the file's ReaderAt; a failure is EIO for this read.
func (n *file) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= n.f.Size {
		return fuse.ReadResultData(nil), fs.OK
	}
	dest = dest[:min(int64(len(dest)), n.f.Size-off)]
	k, err := n.f.Data.ReadAt(dest, off)
	if err != nil && !(errors.Is(err, io.EOF) && k == len(dest)) {
		var l LoggedError
		if n.log != nil && !(errors.As(err, &l) && l.Logged()) {
			n.log(fmt.Sprintf("%s: read of %d bytes at %d: %v", n.f.Name, len(dest), off, err))
		}
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(dest[:k]), fs.OK
}
