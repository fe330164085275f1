package restore

import (
	"errors"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// Proven reports whether err proves the data damaged or missing (exit code
// 1): a chunk, blob, index or manifest that was read and failed a check
// (chunkstore.Damaged, index's format and checksum errors, a manifest
// signature that does not verify), something the store said definitively is
// not there (chunkstore.Missing), a key or passphrase that does not open the
// data, or a restore with damage (*DamagedError). An error that also wraps
// a cause outside the data (chunkstore.Outside) proves nothing, and so does
// every error of a kind not named here: the run could not complete, for a
// reason that a later run may not meet (exit code 3). A nil error proves
// nothing.
func Proven(err error) bool {
	if err == nil || chunkstore.Outside(err) {
		return false
	}
	var de *DamagedError
	if chunkstore.Proven(err) || errors.As(err, &de) {
		return true
	}
	// Beyond chunkstore's kinds: an index or manifest that was read and
	// failed a check, an archive the manifest does not list, and a key or
	// passphrase that does not open the data.
	for _, k := range []error{
		index.ErrBadMagic, index.ErrBadChunkSize, index.ErrBadLength, index.ErrBadIndex, index.ErrBadManifest,
		index.ErrMissingKey, index.ErrWrongKey, index.ErrBadSignature, index.ErrUnsigned, index.ErrNotInManifest,
		index.ErrSizeMismatch, index.ErrCsumMismatch, index.ErrBadName,
		chunkstore.ErrNoKey, ErrNotChunkIndex,
		crypto.ErrAuth, crypto.ErrWrongPassphrase, crypto.ErrKeyFingerprint, crypto.ErrPaperKey,
		crypto.ErrMasterKeyFormat, crypto.ErrMasterKeyPassphrase, crypto.ErrRSAKeyBlob,
	} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
