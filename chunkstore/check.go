package chunkstore

import (
	"fmt"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Errors for a chunk whose content is not what its index says; match them
// with errors.Is (each also matches ErrDamaged). The restore pipeline, verify and the archive reader all
// get them from Decoder.DecodeChunk.
var (
	ErrDigestMismatch    = DamageKind("digest mismatch")
	ErrLengthMismatch    = DamageKind("decoded length does not match the index")
	ErrCryptModeMismatch = DamageKind("chunk crypt mode does not match the manifest")
)

// CheckCryptMode returns blob's kind, or an error wrapping
// ErrCryptModeMismatch unless the blob is encrypted exactly when encrypted
// is set (the manifest's crypt mode, §2.5), or one of Kind's errors.
func CheckCryptMode(blob []byte, encrypted bool) (BlobKind, error) {
	kind, err := Kind(blob)
	if err != nil {
		return 0, err
	}
	if kind.Encrypted() != encrypted {
		want := "plain"
		if encrypted {
			want = "encrypted"
		}
		return kind, fmt.Errorf("%w: manifest says %s, chunk is %s", ErrCryptModeMismatch, want, kind)
	}
	return kind, nil
}

// DecodeChunk is the one check every chunk read passes (§2.5, §7.2): the
// blob's crypt mode must match encrypted; it is decoded (CRC, AES-256-GCM
// with cc, zstd) into dst[:0]; the plaintext must be length bytes and hash
// to digest (SHA-256 of the plaintext, followed by cc's id key when
// encrypted). cc is ignored unless encrypted. blob's spare capacity may be
// overwritten. With cap(dst) ≥ length it allocates nothing. Errors wrap
// ErrCryptModeMismatch, ErrLengthMismatch, ErrDigestMismatch or one of
// Decode's errors.
func (d *Decoder) DecodeChunk(dst, blob []byte, digest crypto.Digest, length int, encrypted bool, cc *crypto.Config) ([]byte, error) {
	return d.decodeChunk(dst, blob, digest, length, encrypted, cc, false)
}

// DecodeChunkInPlace is DecodeChunk through DecodeInPlace: blob is
// decrypted over itself, and the plaintext of an uncompressed chunk is
// returned as a slice of blob rather than copied into dst (only a
// compressed chunk is decoded into dst, which then needs cap(dst) ≥ length
// not to allocate). Afterwards, passed or failed, blob holds no usable
// blob. It fails exactly where DecodeChunk fails, with the same errors.
func (d *Decoder) DecodeChunkInPlace(dst, blob []byte, digest crypto.Digest, length int, encrypted bool, cc *crypto.Config) ([]byte, error) {
	return d.decodeChunk(dst, blob, digest, length, encrypted, cc, true)
}

// decodeChunk is DecodeChunk, and with inPlace DecodeChunkInPlace.
func (d *Decoder) decodeChunk(dst, blob []byte, digest crypto.Digest, length int, encrypted bool, cc *crypto.Config, inPlace bool) ([]byte, error) {
	if _, err := CheckCryptMode(blob, encrypted); err != nil {
		return nil, err
	}
	if !encrypted {
		cc = nil // plain digests for none and sign-only
	}
	data, _, err := d.decode(dst, blob, cc, length, inPlace)
	if err != nil {
		return nil, err
	}
	if len(data) != length {
		return nil, fmt.Errorf("%w: decoded %d bytes, index says %d", ErrLengthMismatch, len(data), length)
	}
	d.hash.Reset()
	d.hash.Write(data)
	d.hash.Write(cc.DigestSuffix())
	d.hash.Sum(d.sum[:0])
	if d.sum != digest {
		return nil, fmt.Errorf("%w: %s", ErrDigestMismatch, DigestMismatchText(d.sum, digest, cc))
	}
	return data, nil
}

// DigestMismatchText describes a digest mismatch. A keyed digest (cc != nil) is
// derived from the key, so it is never printed; a plain SHA-256 is.
func DigestMismatchText(got, want crypto.Digest, cc *crypto.Config) string {
	if cc != nil {
		return fmt.Sprintf("content does not hash to %s with the given key", want)
	}
	return fmt.Sprintf("content hashes to %s, index says %s", got, want)
}
