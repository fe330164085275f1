// Package crypto implements the PBS encryption primitives: the CryptConfig
// derived from a 32-byte key (FORMAT.md §5.1), AES-256-GCM with a 16-byte IV
// (§5.2), keyed chunk digests (§2.8), manifest HMACs (§6.3), key fingerprints
// (§5.4) and key files (§5.3).
package crypto

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a PBS encryption key in bytes.
const KeySize = 32

// IVSize is the AES-GCM IV length PBS uses (16 bytes, not 12), §5.2.
const IVSize = 16

// TagSize is the AES-GCM authentication tag length, §5.2.
const TagSize = 16

// Digest is a 32-byte SHA-256-sized chunk digest (§2.8).
type Digest [32]byte

// String returns the digest as 64 lowercase hex characters.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// ParseDigest parses 64 hex characters (either case) into a Digest.
// It returns an error for any other length or a non-hex character.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 64 {
		return d, fmt.Errorf("digest %q: want 64 hex characters, got %d", s, len(s))
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("digest %q: %v", s, err)
	}
	return d, nil
}

// Fingerprint identifies a key: SHA256(FingerprintInput || id_key), §5.1.
type Fingerprint [32]byte

// fingerprintInput is SHA256("Proxmox Backup Encryption Key Fingerprint"), §5.1.
var fingerprintInput = sha256.Sum256([]byte("Proxmox Backup Encryption Key Fingerprint"))

// String returns the full form: 32 lowercase hex byte pairs joined by ':' (95 characters), §5.4.
func (f Fingerprint) String() string { return colonHex(f[:]) }

// Short returns the 8-byte "key ID" form, e.g. "0e:ab:d4:46:0b:6e:b9:ca", §5.4.
func (f Fingerprint) Short() string { return colonHex(f[:8]) }

func colonHex(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(hex.EncodeToString([]byte{c}))
	}
	return sb.String()
}

// ParseFingerprint parses the full colon form (colons optional): it strips ':'
// and requires 64 hex digits, §5.4.
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	h := strings.ReplaceAll(s, ":", "")
	if len(h) != 64 {
		return f, fmt.Errorf("fingerprint %q: want 32 bytes (64 hex digits)", s)
	}
	if _, err := hex.Decode(f[:], []byte(h)); err != nil {
		return f, fmt.Errorf("fingerprint %q: %v", s, err)
	}
	return f, nil
}

// Config is the PBS CryptConfig derived from one 32-byte key (§5.1). It is
// safe for concurrent use.
type Config struct {
	aead        cipher.AEAD
	key         [KeySize]byte // kept for UnprotectedKeyFile (master-key recovery, §5.5)
	idKey       [32]byte
	fingerprint Fingerprint
}

// NewConfig derives the CryptConfig for key: id_key = PBKDF2-HMAC-SHA256(key,
// "_id_key", 10 iterations, 32 bytes) and the fingerprint (§5.1).
func NewConfig(key [KeySize]byte) (*Config, error) {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithNonceSize(block, IVSize)
	if err != nil {
		return nil, err
	}
	c := &Config{aead: aead, key: key}
	idk, err := pbkdf2.Key(sha256.New, string(key[:]), []byte("_id_key"), 10, 32)
	if err != nil {
		return nil, err
	}
	copy(c.idKey[:], idk)
	h := sha256.New()
	h.Write(fingerprintInput[:])
	h.Write(c.idKey[:])
	copy(c.fingerprint[:], h.Sum(nil))
	return c, nil
}

// IDKey returns the derived 32-byte id_key.
func (c *Config) IDKey() [32]byte { return c.idKey }

// Fingerprint returns the key fingerprint (§5.1).
func (c *Config) Fingerprint() Fingerprint { return c.fingerprint }

// DigestSuffix returns what is appended to chunk plaintext before hashing:
// the id_key for an encrypting config, nil for c == nil (plain digests), §2.8.
func (c *Config) DigestSuffix() []byte {
	if c == nil {
		return nil
	}
	return c.idKey[:]
}

// ChunkDigest computes a chunk digest over plaintext: SHA256(data) when c is
// nil, SHA256(data || id_key) otherwise (§2.8).
func (c *Config) ChunkDigest(data []byte) Digest {
	h := sha256.New()
	h.Write(data)
	h.Write(c.DigestSuffix())
	var d Digest
	h.Sum(d[:0])
	return d
}

// AuthTag returns HMAC-SHA256(id_key, msg), used for manifest signatures (§6.3).
func (c *Config) AuthTag(msg []byte) [32]byte {
	m := hmac.New(sha256.New, c.idKey[:])
	m.Write(msg)
	var t [32]byte
	m.Sum(t[:0])
	return t
}

// Seal encrypts plaintext with AES-256-GCM (16-byte iv, empty AAD), appending
// the ciphertext to dst and returning it with the 16-byte tag (§5.2).
func (c *Config) Seal(dst []byte, iv *[IVSize]byte, plaintext []byte) (out []byte, tag [TagSize]byte) {
	out = c.aead.Seal(dst, iv[:], plaintext, nil)
	copy(tag[:], out[len(out)-TagSize:])
	return out[:len(out)-TagSize], tag
}

// ErrAuth is returned by Open when the GCM tag does not authenticate the
// ciphertext: the wrong key, or damaged data.
var ErrAuth = errors.New("AES-GCM authentication failed (wrong key or damaged data)")

// Open decrypts ciphertext with the given iv and tag (§5.2), appending the
// plaintext to dst. scratch, if it has capacity for len(ciphertext)+16 bytes,
// is used to join ciphertext and tag without allocating. It returns ErrAuth on
// a tag mismatch.
func (c *Config) Open(dst []byte, iv, tag, ciphertext []byte, scratch []byte) ([]byte, []byte, error) {
	return openGCM(c.aead, dst, iv, tag, ciphertext, scratch)
}

// OpenJoined decrypts ciphertextAndTag (the ciphertext followed by its
// 16-byte tag, as Go's AEAD expects) with iv, appending the plaintext to dst.
// It returns ErrAuth on a tag mismatch.
func (c *Config) OpenJoined(dst []byte, iv, ciphertextAndTag []byte) ([]byte, error) {
	if len(iv) != IVSize || len(ciphertextAndTag) < TagSize {
		return dst, fmt.Errorf("bad IV/ciphertext length %d/%d", len(iv), len(ciphertextAndTag))
	}
	out, err := c.aead.Open(dst, iv, ciphertextAndTag, nil)
	if err != nil {
		return dst, ErrAuth
	}
	return out, nil
}

func openGCM(aead cipher.AEAD, dst []byte, iv, tag, ciphertext, scratch []byte) ([]byte, []byte, error) {
	if len(iv) != IVSize || len(tag) != TagSize {
		return dst, scratch, fmt.Errorf("bad IV/tag length %d/%d", len(iv), len(tag))
	}
	need := len(ciphertext) + TagSize
	if cap(scratch) < need {
		scratch = make([]byte, need)
	}
	scratch = scratch[:need]
	copy(scratch, ciphertext)
	copy(scratch[len(ciphertext):], tag)
	out, err := aead.Open(dst, iv, scratch, nil)
	if err != nil {
		return dst, scratch, ErrAuth
	}
	return out, scratch, nil
}
