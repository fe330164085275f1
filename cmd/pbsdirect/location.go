package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

// A location is where a command keeps a file of its own (verify state,
// reports): a local path, s3://bucket/key or gs://bucket/key, reached with
// the same --s3-* settings as the store.

// openLocationDir opens the bucket "directory" of a remote location as a
// plain-layout store and returns it with the object's name in it.
func openLocationDir(ctx context.Context, sf *storeFlags, loc string) (chunkstore.WriteStore, string, error) {
	scheme, rest, _ := strings.Cut(loc, "://")
	dir, name := path.Split(rest)
	dir = strings.TrimSuffix(dir, "/")
	if name == "" || dir == "" {
		return nil, "", usagef("%s: want %s://bucket/[prefix/]name", loc, scheme)
	}
	ps, err := sf.pathStyle()
	if err != nil {
		return nil, "", err
	}
	layout, _ := backends.ParseLayout("plain")
	s, err := backends.OpenWrite(ctx, scheme+"://"+dir, backends.Options{
		Layout: layout,
		S3:     s3store.Options{Endpoint: sf.s3Endpoint, Region: sf.s3Region, PathStyle: ps},
	})
	return s, name, err
}

// readLocation reads the whole file at loc, at most limit bytes. A missing
// file returns an error wrapping chunkstore.ErrNotFound.
func readLocation(ctx context.Context, sf *storeFlags, loc string, limit int64) ([]byte, error) {
	var (
		r    io.ReadCloser
		size int64
	)
	if backends.IsRemote(loc) {
		s, name, err := openLocationDir(ctx, sf, loc)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		if r, size, err = s.OpenFile(ctx, name); err != nil {
			return nil, err
		}
	} else {
		// O_NONBLOCK: a FIFO is refused below, not waited on.
		f, err := os.OpenFile(loc, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			if os.IsNotExist(err) {
				return nil, fmt.Errorf("%s: %w", loc, chunkstore.ErrNotFound)
			}
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			f.Close()
			return nil, usagef("%s %s, not a regular file", loc, fileKind(fi.Mode()))
		}
		r, size = f, fi.Size()
	}
	defer r.Close()
	if size > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this file may have", loc, size, limit)
	}
	var b bytes.Buffer
	b.Grow(int(size))
	if _, err := io.Copy(&b, io.LimitReader(r, limit)); err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return b.Bytes(), nil
}

// writeLocation replaces the file at loc with data atomically: a local
// file through a synced temporary file renamed over it (and the directory
// synced), a bucket object by one PUT.
func writeLocation(ctx context.Context, sf *storeFlags, loc string, data []byte) error {
	if backends.IsRemote(loc) {
		s, name, err := openLocationDir(ctx, sf, loc)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.WriteFile(ctx, name, data)
	}
	return replaceLocalFile(loc, data)
}

// replaceLocalFile writes data to the local file loc as a new file (synced)
// renamed over it (see replacement): another name of the old file (a hard
// link) keeps its content, and a failure leaves loc as it was. Something
// at loc that is not a regular file (a symbolic link, a device, a FIFO, a
// directory) is refused, not replaced (a usage error).
func replaceLocalFile(loc string, data []byte) error {
	r, err := newReplacement(loc)
	if err != nil {
		return err
	}
	defer r.abort()
	if _, err := r.Write(data); err != nil {
		return localWriteError(loc, err)
	}
	return r.commit()
}

// replacement is a new version of the local file loc being written: a
// temporary file beside it (a short name: a long one would fail where loc
// itself fits), renamed over loc by commit. Until then loc is as it was.
type replacement struct {
	*os.File
	loc string
}

// newReplacement starts a replacement of loc; something at loc that is not
// a regular file is a usage error.
func newReplacement(loc string) (*replacement, error) {
	if st, err := os.Lstat(loc); err == nil && !st.Mode().IsRegular() {
		return nil, usagef("%s %s, not a regular file: not replaced (give a file path)", loc, fileKind(st.Mode()))
	}
	f, err := os.CreateTemp(filepath.Dir(loc), ".pbsdirect-*.tmp")
	if err != nil {
		return nil, localWriteError(loc, err)
	}
	return &replacement{File: f, loc: loc}, nil
}

// commit gives the written file loc's mode (outputFileMode), syncs it,
// renames it over loc and syncs the directory.
func (r *replacement) commit() error {
	err := r.Chmod(outputFileMode(r.loc))
	if err == nil {
		err = r.Sync()
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.Name(), r.loc)
	}
	if err != nil {
		return localWriteError(r.loc, err)
	}
	if d, err := os.Open(filepath.Dir(r.loc)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// abort drops the temporary file unless commit renamed it; it may be
// deferred right after newReplacement.
func (r *replacement) abort() {
	r.Close()
	os.Remove(r.Name()) // gone already when committed
}

// localWriteError names loc in a failed write of an output file (a report,
// a state, metrics, a man page): a path that cannot be one (missing
// directory, a directory in the way, a name too long) is a usage error
// (exit 2); no space, no permission, busy and I/O errors lie outside the
// data (exit 3).
func localWriteError(loc string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err // the temporary name is ours, not the user's
	case errors.As(err, &le):
		err = le.Err
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) || errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENAMETOOLONG) {
		return usagef("%s: cannot write a file there: %v", loc, err)
	}
	// No space, no permission, busy, I/O: the machine, not the data.
	return &outsideError{fmt.Errorf("%s: %w", loc, err)}
}

// checkOutputPath checks, before any work, that a local output file given
// with flag (a report, a state, metrics) can be written where loc says: its
// directory exists and loc is not a directory. Bucket locations and ""
// pass.
func checkOutputPath(flag, loc string) error {
	if loc == "" || backends.IsRemote(loc) {
		return nil
	}
	if loc == "-" {
		return usagef("%s -: give a file path (for JSON on standard output: --output-format json)", flag)
	}
	if st, err := os.Stat(filepath.Dir(loc)); err != nil || !st.IsDir() {
		return usagef("%s %s: the directory %s does not exist", flag, loc, filepath.Dir(loc))
	}
	if st, err := os.Lstat(loc); err == nil && !st.Mode().IsRegular() {
		return usagef("%s %s: %s, not a regular file: it would be replaced (give a file path)", flag, loc, fileKind(st.Mode()))
	}
	return nil
}

// fileKind names what a file of mode m is, for messages: "is a directory",
// "is a symbolic link", …
func fileKind(m fs.FileMode) string {
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

// outputFileMode is the mode an output file (report, state, metrics, man
// page, damaged list) written to loc gets: the mode of the file it
// replaces, else 0644 less the process's umask, as a file created in place
// would have had.
func outputFileMode(loc string) fs.FileMode {
	if st, err := os.Stat(loc); err == nil && st.Mode().IsRegular() {
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
