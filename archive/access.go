package archive

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/pbsdirect/pbsdirect/snapshot"
)

// FileName is an archive's file name where it is served as a file (a
// mount): the index or blob suffix dropped ("drive-scsi0.img.fidx" →
// "drive-scsi0.img", "qemu-server.conf.blob" → "qemu-server.conf").
func FileName(archive string) string {
	for _, suf := range []string{".fidx", ".didx", ".blob"} {
		if s, ok := strings.CutSuffix(archive, suf); ok {
			return s
		}
	}
	return archive
}

// ExportName is an image archive's name where it is served as a disk (an
// NBD export): "drive-scsi0.img.fidx" → "drive-scsi0".
func ExportName(archive string) string {
	return strings.TrimSuffix(strings.TrimSuffix(archive, ".fidx"), ".img")
}

// LimitMemory asks the garbage collector to keep the heap within cache
// bytes plus 64 MiB while archives are served, unless GOMEMLIMIT says
// otherwise: what serving needs beside the cache (request buffers, fetch
// buffers) stays small. It returns the function that puts the previous
// limit back.
func LimitMemory(cache int64) (restoreLimit func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(cache + 64<<20)
	return func() { debug.SetMemoryLimit(prev) }
}

// CopyError is a Copy that failed after N bytes of archive Name were
// written.
type CopyError struct {
	Name string
	N    int64
	Err  error
}

// Error says what failed after how many bytes.
func (e *CopyError) Error() string {
	return fmt.Sprintf("copy of %s failed after %d bytes: %v", e.Name, e.N, e.Err)
}

// Unwrap returns the cause.
func (e *CopyError) Unwrap() error { return e.Err }

// Copy writes archive name of src to w in order and returns the bytes
// written: a blob decoded and checked, an image or dynamic archive through
// a Reader (zero chunks as zeros, chunks read ahead as a restore fetches
// them) whose cache holds two chunks per fetcher, so that memory stays
// bounded. Errors before any byte is written are the opening's; a write or
// read that fails later is a *CopyError.
func Copy(ctx context.Context, src *snapshot.Reader, name string, w io.Writer, opts Options) (int64, error) {
	if strings.HasSuffix(name, ".blob") {
		data, err := src.Blob(ctx, name)
		if err != nil {
			return 0, err
		}
		n, err := w.Write(data)
		if err != nil {
			return int64(n), &CopyError{Name: name, N: int64(n), Err: err}
		}
		return int64(n), nil
	}
	opts.CacheSize = int64(2*opts.Fetchers+2) << 22
	r, err := OpenSnapshot(ctx, src, name, opts)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	buf := make([]byte, max(r.ChunkSize(), 1<<20))
	n, err := io.CopyBuffer(onlyWriter{w}, io.NewSectionReader(r, 0, r.Size()), buf)
	if err != nil {
		return n, &CopyError{Name: r.Name(), N: n, Err: err}
	}
	return n, nil
}

// onlyWriter hides a writer's ReadFrom, so that io.CopyBuffer reads in
// chunks of the buffer given.
type onlyWriter struct{ io.Writer }
