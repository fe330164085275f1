package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
)

// A location is where a command keeps a file of its own (verify state,
// reports): a local path, s3://bucket/key or gs://bucket/key, reached with
// the same --s3-* settings as the store.

// locationDir splits a remote location into the bucket "directory" it lies
// in, as a store specification, and the object's name in it, with the
// options that open that directory as a plain-layout store.
func locationDir(sf *storeFlags, loc string) (string, string, backends.Options, error) {
	scheme, rest, _ := strings.Cut(loc, "://")
	dir, name := path.Split(rest)
	dir = strings.TrimSuffix(dir, "/")
	if name == "" || dir == "" {
		return "", "", backends.Options{}, usagef("%s: want %s://bucket/[prefix/]name", loc, scheme)
	}
	s3, err := sf.settings().S3Options()
	if err != nil {
		return "", "", backends.Options{}, usageOf(err)
	}
	return scheme + "://" + dir, name, backends.Options{Layout: backends.LayoutPlain, S3: s3}, nil
}

// readLocation reads the whole file at loc, at most limit bytes. A missing
// file returns an error wrapping chunkstore.ErrNotFound.
func readLocation(ctx context.Context, sf *storeFlags, loc string, limit int64) ([]byte, error) {
	var (
		r    io.ReadCloser
		size int64
	)
	if backends.IsRemote(loc) {
		dir, name, opts, err := locationDir(sf, loc)
		if err != nil {
			return nil, err
		}
		s, err := backends.Open(ctx, dir, opts)
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
		dir, name, opts, err := locationDir(sf, loc)
		if err != nil {
			return err
		}
		s, err := backends.OpenWrite(ctx, dir, opts)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.WriteFile(ctx, name, data)
	}
	return outfile.Replace(loc, data)
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

// fileKind names what a file of mode m is, for messages (outfile.Kind).
func fileKind(m fs.FileMode) string { return outfile.Kind(m) }
