package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// ErrNotFound is wrapped by every Store error for a chunk, file or object
// that does not exist. It is never retried.
var ErrNotFound = errors.New("not found")

// ErrDenied is wrapped by Store errors for access that was refused (HTTP 403,
// EACCES). It is never retried.
var ErrDenied = errors.New("access denied")

// FileInfo is one content file of a datastore: Path is datastore-relative
// with '/' separators (e.g. "ns/prod/vm/100/2026-11-29T10:00:00Z/index.json.blob"),
// Size in bytes.
type FileInfo struct {
	Path string
	Size int64
}

// Store is where a datastore's bytes live, for reading: a directory, a
// bucket prefix in either the PBS 4 S3 layout (§8.1) or a plain copy of a
// datastore directory (§1), or a Chain of several. Content paths are
// datastore-relative ("vm/100/<time>/index.json.blob"); chunks are
// addressed by digest. Implementations are safe for concurrent use. What
// some stores can do beyond reading are the capabilities declared below
// (WriteStore, ChunkStatter, ChunkReplacer, BadCopies, MemberStore,
// FallThrough, RedirectFollower, Warner; the bucket backends' in
// chunkstore/bucket): callers ask for them by these names, never by a
// concrete type.
type Store interface {
	// String names the store for messages, e.g. "/mnt/datastore" or "s3://bucket/prefix".
	String() string
	// ChunkLocation names where the chunk for d lives (file path or object
	// URL), for error messages.
	ChunkLocation(d crypto.Digest) string
	// ReadChunk reads the encoded chunk (a DataBlob) for d, appending it to
	// buf[:0], and returns it. limit is the most bytes the chunk may have
	// (see ChunkLimit; 0, or more than MaxEncodedSize, means MaxEncodedSize):
	// a larger chunk file or object returns an error wrapping ErrTooLarge
	// that names it and its size, before any of it is read or a buffer
	// allocated for it. A missing chunk returns an error wrapping
	// ErrNotFound; a 0-byte chunk file or object returns one wrapping ErrEmpty.
	// An error that names the chunk's file or object does so by a
	// *LocatedError or *fs.PathError in its tree (see NamesLocation).
	ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error)
	// OpenFile opens the content file rel for streaming and returns its size
	// in bytes, or -1 when a bucket server did not announce it (no
	// Content-Length, a gzip-encoded body): the reader then ends where the
	// object does. A missing file returns an error wrapping ErrNotFound.
	OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error)
	// ListFiles returns every content file below the datastore-relative
	// directory dir (recursively, any order). dir must not be empty, and
	// listing never descends into ".chunks". A missing dir yields no files.
	ListFiles(ctx context.Context, dir string) ([]FileInfo, error)
	// Close releases the store's resources.
	Close() error
}

// WriteStore is a Store that backups write to: a directory or a bucket
// prefix (a Chain is not one: a backup writes to one store).
type WriteStore interface {
	Store
	// ClaimSnapshot claims a snapshot directory for one writer (see
	// SnapshotClaimer).
	SnapshotClaimer
	// WriteChunk stores the encoded chunk blob for d unless a chunk with that
	// digest already exists, in which case it reports existed = true and
	// leaves the stored chunk as it is (on a filesystem it refreshes its atime
	// so that garbage collection keeps it, §9).
	WriteChunk(ctx context.Context, d crypto.Digest, blob []byte) (existed bool, err error)
	// WriteFile stores the content file rel, replacing any existing one
	// atomically (temp file + rename on a filesystem).
	WriteFile(ctx context.Context, rel string, data []byte) error
}

// FallThrough is a Store that holds several copies of a datastore (a
// Chain): a reader that checks what it read can go on to the next copy of
// a chunk that failed its check, and have each copy counted where it came
// from.
type FallThrough interface {
	MemberStore
	// ReadChunkFrom reads d, at most limit bytes, from the first member at
	// index from or later that returns a copy, and returns it with that
	// member's index (see Chain.ReadChunkFrom).
	ReadChunkFrom(ctx context.Context, d crypto.Digest, buf []byte, limit, from int) ([]byte, int, error)
	// Served counts a copy of d, of n encoded bytes, from member m that
	// passed the reader's check.
	Served(d crypto.Digest, m, n int)
	// Damaged counts a copy of d from member m that failed the reader's
	// check with err.
	Damaged(d crypto.Digest, m int, err error)
	// Stats returns what each member contributed, in order of preference.
	Stats() []MemberStats
}

// RedirectFollower is a Store that corrected something on its own while
// opening (a bucket's region, path-style addressing), so that the user can
// be told which flag skips the detour.
type RedirectFollower interface {
	// Followed returns what was corrected, one entry each: "region R", or
	// the endpoint used instead of the virtual-host name.
	Followed() []string
}

// Warner is a Store whose listings can leave things out or disagree (a
// bucket's keys it cannot decode, entries that name nothing, the members
// of a Chain that lag); stores implement it by embedding Warnings.
type Warner interface {
	// WarnTo sets where the store says so: one line without a line end per
	// finding, from any goroutine; f must escape the text for a terminal.
	// Call it before the store is used.
	WarnTo(f func(msg string))
	// Warn says msg through the WarnTo function, once per non-empty key.
	Warn(key, msg string)
}

// MaxEncodedSize is the largest DataBlob in bytes: MaxBlobSize of data
// behind the largest (encrypted) header (§2.2, §2.7).
const MaxEncodedSize = MaxBlobSize + EncryptedHeaderSize

// ChunkLimit returns the most bytes a chunk of length plaintext bytes may
// have stored: the data and the encrypted header (§2.2). PBS stores a chunk
// compressed only when that makes it smaller (§2.4), so no blob it writes
// is longer. A length ≤ 0 or beyond MaxBlobSize gives MaxEncodedSize.
func ChunkLimit(length int) int {
	if length <= 0 || length > MaxBlobSize {
		return MaxEncodedSize
	}
	return length + EncryptedHeaderSize
}

// ReadLimit returns the limit in bytes a ReadChunk implementation enforces
// for the limit its caller gave: MaxEncodedSize when that is ≤ 0 or larger.
func ReadLimit(limit int) int64 {
	if limit <= 0 || limit > MaxEncodedSize {
		return MaxEncodedSize
	}
	return int64(limit)
}

// ChunkRelPath returns the datastore-relative path of a chunk:
// ".chunks/<first 4 hex>/<64 hex>" (§1.2, §8.1).
func ChunkRelPath(d crypto.Digest) string {
	h := d.String()
	return path.Join(".chunks", h[:4], h)
}

// ReadFile reads the whole content file rel from s: a blob (manifest, config
// blob), so a file larger than a blob can be is refused (ErrTooLarge) before
// anything is allocated, and reading stops there too (also for a file of
// unknown size, read to its end). A file shorter than its size fails.
func ReadFile(ctx context.Context, s FileOpener, rel string) ([]byte, error) {
	r, size, err := s.OpenFile(ctx, rel)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if size > MaxBlobSize+EncryptedHeaderSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, a blob holds at most %d", rel, ErrTooLarge, size, MaxBlobSize+EncryptedHeaderSize)
	}
	buf := make([]byte, 0, max(size, 0)+1)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if size >= 0 && int64(len(buf)) != size {
				return nil, fmt.Errorf("%s: %d bytes read, %d announced", rel, len(buf), size)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) > MaxBlobSize+EncryptedHeaderSize {
			return nil, fmt.Errorf("%s: %w: more than %d bytes", rel, ErrTooLarge, MaxBlobSize+EncryptedHeaderSize)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
