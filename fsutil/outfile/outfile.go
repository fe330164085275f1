// Package outfile writes a program's own output files (reports, states,
// metrics, man pages, lists) on the local file system: a new version is
// written beside the file, synced, and renamed over it, so that a failure
// leaves the old file as it was and another name of it (a hard link) keeps
// its content. Something at the path that is not a regular file (a
// symbolic link, a device, a FIFO, a directory) is refused, never written
// through. It knows nothing of PBS.
//
// Errors are of two classes: ErrUnusable (the path cannot take a file: the
// caller must name another, a usage mistake) and ErrWrite (no space, no
// permission, I/O: the machine).
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

var (
	// ErrUnusable is matched by the errors for a path that cannot take an
	// output file: not a regular file, a directory missing or in the way,
	// a name too long.
	ErrUnusable = errors.New("not a path an output file can be written at")
	// ErrWrite is matched by the errors of a write that failed for a
	// reason of the machine: no space, no permission, busy, I/O.
	ErrWrite = errors.New("output file not written")
)

// classError is an error of one class (ErrUnusable or ErrWrite): it says
// msg and unwraps to its cause, when it has one.
type classError struct {
	class error
	msg   string
	err   error
}

// Error returns the message.
func (e *classError) Error() string { return e.msg }

// Unwrap returns the cause, or nil.
func (e *classError) Unwrap() error { return e.err }

// Is matches the class.
func (e *classError) Is(target error) bool { return target == e.class }

// Replace writes data to the local file path as a new file (synced)
// renamed over it (see Replacement).
func Replace(path string, data []byte) error {
	r, err := New(path)
	if err != nil {
		return err
	}
	defer r.Abort()
	if _, err := r.Write(data); err != nil {
		return WriteError(path, err)
	}
	return r.Commit()
}

// Replacement is a new version of the local file at a path being written:
// a temporary file beside it (a short name: a long one would fail where
// the path itself fits), renamed over the path by Commit. Until then the
// file at the path is as it was. Write errors should go through
// WriteError.
type Replacement struct {
	*os.File
	path string
}

// New starts a replacement of path. Something at path that is not a
// regular file is refused ("PATH is a directory, not a regular file: not
// replaced (give a file path)", matching ErrUnusable); so is a directory
// where the temporary file cannot be made (WriteError).
func New(path string) (*Replacement, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, &classError{class: ErrUnusable, msg: fmt.Sprintf("%s %s, not a regular file: not replaced (give a file path)", path, Kind(st.Mode()))}
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".pbsdirect-*.tmp")
	if err != nil {
		return nil, WriteError(path, err)
	}
	return &Replacement{File: f, path: path}, nil
}

// Commit gives the written file the path's mode (Mode), syncs it, renames
// it over the path and syncs the directory. Errors are WriteError's.
func (r *Replacement) Commit() error {
	err := r.Chmod(Mode(r.path))
	if err == nil {
		err = r.Sync()
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.Name(), r.path)
	}
	if err != nil {
		return WriteError(r.path, err)
	}
	if d, err := os.Open(filepath.Dir(r.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort drops the temporary file unless Commit renamed it; it may be
// deferred right after New.
func (r *Replacement) Abort() {
	r.Close()
	os.Remove(r.Name()) // gone already when committed
}

// WriteError names path in a failed write of an output file: a path that
// cannot be one (missing directory, a directory in the way, a name too
// long) says "PATH: cannot write a file there: CAUSE" and matches
// ErrUnusable; no space, no permission, busy and I/O errors say
// "PATH: CAUSE" and match ErrWrite. The temporary file's name is left out.
func WriteError(path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err // the temporary name is ours, not the user's
	case errors.As(err, &le):
		err = le.Err
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) || errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENAMETOOLONG) {
		return &classError{class: ErrUnusable, msg: fmt.Sprintf("%s: cannot write a file there: %v", path, err)}
	}
	// No space, no permission, busy, I/O: the machine, not the data.
	return &classError{class: ErrWrite, msg: fmt.Sprintf("%s: %v", path, err), err: err}
}

// Kind names what a file of mode m is, for messages: "is a directory",
// "is a symbolic link", "is a FIFO", "is a socket", "is a device", or
// "is not a regular file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "is a directory"
	case m&fs.ModeSymlink != 0:
		return "is a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "is a FIFO"
	case m&fs.ModeSocket != 0:
		return "is a socket"
	case m&fs.ModeDevice != 0:
		return "is a device"
	}
	return "is not a regular file"
}

// Mode is the mode an output file written to path gets: the permissions
// of the regular file it replaces, else 0644 less the process's umask
// (from /proc/self/status; 022 when it cannot be read), as a file created
// in place would have had.
func Mode(path string) fs.FileMode {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return st.Mode().Perm()
	}
	mask := fs.FileMode(0o022)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					mask = fs.FileMode(m)
				}
			}
		}
	}
	return 0o644 &^ mask
}
