// Package pxarfs shows a pxar archive as a fusefs tree: directories are
// listed (goodbye table, one entry decoded at a time) and looked up
// (goodbye table search) only when the kernel asks, so a mount reads the
// metadata it shows and, for regular files, only the content ranges read.
//
// What each entry shows: its mode, uid, gid and mtime (nanoseconds) from
// the archive; a regular file's size; a symlink's target; a device node's
// numbers; FIFOs and sockets by type. Inode numbers come from the
// entries' offsets in the metadata stream (pxar.Entry.Offset), so they are
// stable across mounts. A hardlink is the inode of its target file; its
// link count is 1 plus the hardlinks to it met so far (the format stores
// no link count). Extended attributes: the archive's xattrs under their
// names, file capabilities as security.capability, and POSIX ACLs as
// system.posix_acl_access and system.posix_acl_default in the kernel's
// binary form (what getfacl reads).
package pxarfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// Root returns the archive's root directory as a fusefs tree, for
// fusefs.File.Node. Errors of the archive (pxar.Error, wrapping the
// stream reader's) come back from the nodes' methods as they are met.
func Root(a *pxar.Archive) fusefs.DirNode { return NewRoot(a, Options{}) }

// Options says how NewRoot's tree reports what it cannot show.
type Options struct {
	// Log, when set, receives each distinct error of the archive once
	// (its text quotes the archive's names), at most maxLogged of them:
	// entries that do not decode, listings that fail, and each second
	// entry of one name in a directory, which listings leave out (they
	// show the first). The errors then returned match fusefs.LoggedError,
	// so that the mount does not log them again.
	Log func(msg string)
}

// maxLogged bounds the distinct errors a tree logs (and remembers).
const maxLogged = 10000

// NewRoot is Root reporting as o says.
func NewRoot(a *pxar.Archive, o Options) fusefs.DirNode {
	t := &tree{a: a, links: map[int64]map[int64]bool{}, log: o.Log, logged: map[string]bool{}}
	return &dir{node{t: t, e: a.Root()}}
}

// tree is the state shared by the nodes of one archive.
type tree struct {
	a   *pxar.Archive
	log func(string)

	mu     sync.Mutex
	links  map[int64]map[int64]bool // target offset → hardlink offsets met
	logged map[string]bool          // messages logged
}

// loggedError is an error the tree has logged.
type loggedError struct{ error }

// Logged reports that the tree logged the error (fusefs.LoggedError).
func (loggedError) Logged() bool { return true }

// Unwrap returns the error.
func (e loggedError) Unwrap() error { return e.error }

// report logs err once (the first time its text is met) and returns it
// marked as logged; without a log it returns err as it is.
func (t *tree) report(err error) error {
	if err == nil || t.log == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	msg := err.Error()
	t.mu.Lock()
	first := !t.logged[msg] && len(t.logged) < maxLogged
	if first {
		t.logged[msg] = true
		if len(t.logged) == maxLogged {
			msg += fmt.Sprintf(" (the last of %d errors logged: further ones are not)", maxLogged)
		}
	}
	t.mu.Unlock()
	if first {
		t.log(msg)
	}
	return loggedError{err}
}

// node is an entry (a hardlink's: its target file's).
type node struct {
	t *tree
	e *pxar.Entry
}

type (
	dir     struct{ node }
	file    struct{ node }
	symlink struct{ node }
)

// wrap returns the fusefs node of entry e, resolving a hardlink to its
// target (and counting it).
func (t *tree) wrap(e *pxar.Entry) (fusefs.Node, error) {
	if e.Kind == pxar.KindHardlink {
		target, err := t.a.HardlinkTarget(e)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		m := t.links[target.Offset()]
		if m == nil {
			m = map[int64]bool{}
			t.links[target.Offset()] = m
		}
		m[e.Offset()] = true
		t.mu.Unlock()
		e = target
	}
	n := node{t: t, e: e}
	switch e.Kind {
	case pxar.KindDir:
		return &dir{n}, nil
	case pxar.KindFile:
		return &file{n}, nil
	case pxar.KindSymlink:
		return &symlink{n}, nil
	}
	return &n, nil
}

// Attr reports the entry's metadata.
func (n *node) Attr() fusefs.Attr {
	e := n.e
	a := fusefs.Attr{
		Mode:  uint32(e.Mode),
		Ino:   uint64(e.Offset()) + 1,
		Nlink: 1,
		UID:   e.UID,
		GID:   e.GID,
		MTime: time.Unix(e.MTimeSec, int64(e.MTimeNsec)),
	}
	switch e.Kind {
	case pxar.KindDir:
		a.Nlink = 2
	case pxar.KindFile:
		a.Size = int64(e.Size)
		n.t.mu.Lock()
		a.Nlink += uint32(len(n.t.links[e.Offset()]))
		n.t.mu.Unlock()
	case pxar.KindSymlink:
		a.Size = int64(len(e.LinkTarget))
	case pxar.KindDevice:
		a.Major, a.Minor = uint32(e.Device.Major), uint32(e.Device.Minor)
	}
	return a
}

// Xattrs returns the entry's xattrs, file capabilities and ACLs.
func (n *node) Xattrs() ([]fusefs.Xattr, error) {
	e := n.e
	var xs []fusefs.Xattr
	for _, x := range e.Xattrs {
		xs = append(xs, fusefs.Xattr{Name: string(x.Name), Value: x.Value})
	}
	if e.FCaps != nil {
		xs = append(xs, fusefs.Xattr{Name: "security.capability", Value: e.FCaps})
	}
	if v := e.ACL.AccessXattr(e.Mode, nil); v != nil {
		xs = append(xs, fusefs.Xattr{Name: "system.posix_acl_access", Value: v})
	}
	if v := e.ACL.DefaultXattr(nil); v != nil {
		xs = append(xs, fusefs.Xattr{Name: "system.posix_acl_default", Value: v})
	}
	return xs, nil
}

// Lookup finds name in the directory.
func (d *dir) Lookup(name string) (fusefs.Node, error) {
	e, err := d.t.a.Lookup(d.e, name)
	if err != nil {
		return nil, d.t.report(err)
	}
	n, err := d.t.wrap(e)
	return n, d.t.report(err)
}

// ReadDir lists the directory: a second entry of one name is left out
// and an entry that does not resolve (a hardlink to no file) too, each
// reported; an entry that does not decode ends the listing with its
// error.
func (d *dir) ReadDir() ([]fusefs.DirEntry, error) {
	var ents []fusefs.DirEntry
	seen := map[string]bool{}
	err := d.t.a.ReadDir(d.e, func(e *pxar.Entry) error {
		if seen[e.Name] {
			d.t.report(&pxar.Error{Path: e.Path, Stream: pxar.StreamMeta, Offset: e.Offset(),
				Err: fmt.Errorf("%w: a second entry of this name in its directory: left out, the first is shown", pxar.ErrFormat)})
			return nil
		}
		seen[e.Name] = true
		n, err := d.t.wrap(e)
		if err != nil {
			if d.t.log == nil {
				return err
			}
			d.t.report(err)
			return nil
		}
		ents = append(ents, fusefs.DirEntry{Name: e.Name, Node: n})
		return nil
	})
	return ents, d.t.report(err)
}

// Open returns the file's content reader.
func (f *file) Open() (io.ReaderAt, error) {
	r, err := f.e.Open()
	if err != nil {
		return nil, f.t.report(err)
	}
	return r, nil
}

// Readlink returns the symlink's target.
func (s *symlink) Readlink() (string, error) { return s.e.LinkTarget, nil }
