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
// not there (chunkstore.Missing), a key that does not open the data (another
// key's, a chunk or blob that fails authentication), or a restore with damage
// (*DamagedError). A key file, paper key or master key that was not opened
// (a wrong passphrase, a fingerprint claim its key belies, a printout or PEM
// that does not parse) says nothing about the data and proves nothing. An
// error that also wraps a cause outside the data (chunkstore.Outside) proves
// nothing, and so does every error of a kind not named here: the run could
// not complete, for a reason that a later run may not meet (exit code 3). A
// nil error proves nothing.
func Proven(err error) bool {
	if err == nil || chunkstore.Outside(err) {
		return false
	}
	var de *DamagedError
	if chunkstore.Proven(err) || errors.As(err, &de) {
		return true
	}
	// Beyond chunkstore's kinds: an index or manifest that was read and
	// failed a check, an archive the manifest does not list, and a key
	// that does not open the data. Not a key that was not opened: a
	// passphrase refused is no damage.
	for _, k := range []error{
		index.ErrBadMagic, index.ErrBadChunkSize, index.ErrBadLength, index.ErrBadIndex, index.ErrBadManifest,
		index.ErrMissingKey, index.ErrWrongKey, index.ErrBadSignature, index.ErrUnsigned, index.ErrNotInManifest,
		index.ErrSizeMismatch, index.ErrCsumMismatch, index.ErrBadName,
		chunkstore.ErrNoKey, ErrNotChunkIndex,
		crypto.ErrAuth, crypto.ErrRSAKeyBlob,
	} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
