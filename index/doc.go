// Package index implements the PBS index and metadata formats: the fixed
// index .fidx (FORMAT.md §3), the dynamic index .didx (§4), the backup
// manifest index.json with its canonical-JSON HMAC signature (§6, §5.6), and
// the names of namespaces, snapshots and archives (§1.3, §1.4).
//
// Readers stream: a 64 TiB image has a 512 MiB fixed index, so FixedReader
// and DynamicReader hold one buffered window of the file, never all of it.
// Index checksums are always recomputed from the digests read; the csum in an
// index header is not trusted (§3.2, §6.2).
//
// The package does no disk, network or key-file I/O of its own. Errors wrap
// the sentinel values below with the offending values and byte offsets; they
// do not know the path of the file being read, so callers prefix it
// (fmt.Errorf("%s: %w", path, err)).
package index

import "errors"

// Sentinel errors. Every error returned by this package that is about bad
// input wraps exactly one of these (test with errors.Is) and adds the
// offending values.
var (
	// ErrBadMagic: the first 8 bytes of an index are not the expected magic
	// (§2.1). The message says which index the magic belongs to, if any,
	// and never echoes the bytes found.
	ErrBadMagic = errors.New("bad index magic")
	// ErrBadChunkSize: a fixed index chunk_size that is not a power of two
	// from MinChunkSize to MaxChunkSize (§3.2).
	ErrBadChunkSize = errors.New("bad index chunk size")
	// ErrBadLength: an index file or stream is not exactly as long as its
	// header requires (§3.1, §4.1); the message gives expected and actual lengths.
	ErrBadLength = errors.New("bad index length")
	// ErrBadIndex: an index is structurally invalid in some other way: size 0,
	// non-increasing dynamic ends (§4.2), or a writer given the wrong number of
	// entries.
	ErrBadIndex = errors.New("malformed index")
	// ErrBadManifest: manifest JSON that does not match the schema of §6.1.
	ErrBadManifest = errors.New("malformed manifest")
	// ErrMissingKey: the manifest names a key fingerprint but no key was given (§6.3).
	ErrMissingKey = errors.New("missing key")
	// ErrWrongKey: the manifest's key fingerprint differs from the given key's (§6.3).
	ErrWrongKey = errors.New("wrong key")
	// ErrBadSignature: the manifest signature does not match the HMAC recomputed
	// with the given key (§6.3).
	ErrBadSignature = errors.New("bad manifest signature")
	// ErrUnsigned: a manifest without a signature, or one that cannot be
	// checked, where the caller requires a checked signature (§6.3).
	ErrUnsigned = errors.New("manifest not signed")
	// ErrNotInManifest: an archive name is not listed in the manifest's files.
	ErrNotInManifest = errors.New("archive not in manifest")
	// ErrSizeMismatch: an archive's recomputed size differs from the manifest (§6.2).
	ErrSizeMismatch = errors.New("archive size does not match manifest")
	// ErrCsumMismatch: an archive's recomputed csum differs from the manifest (§6.2).
	ErrCsumMismatch = errors.New("archive checksum does not match manifest")
	// ErrBadName: a namespace, backup type, backup ID, snapshot time or archive
	// name that does not follow §1.3/§1.4.
	ErrBadName = errors.New("bad name")
)
