package crypto

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/scrypt"
)

// KDF names as used on the command line (§5.3): "scrypt", "pbkdf2", "none".
const (
	KDFScrypt = "scrypt"
	KDFPBKDF2 = "pbkdf2"
	KDFNone   = "none"
)

// MinPassphraseLen is the shortest passphrase the official client accepts (bytes).
const MinPassphraseLen = 5

// Errors returned when opening a key file. They are wrapped with the file's context.
var (
	ErrWrongPassphrase    = errors.New("wrong passphrase (key file decryption failed)")
	ErrKeyFingerprint     = errors.New("key file contains wrong fingerprint (stored fingerprint does not match the key)")
	ErrPassphraseNeeded   = errors.New("key file is passphrase-protected and no passphrase was given: set PBS_ENCRYPTION_PASSWORD, PBS_ENCRYPTION_PASSWORD_FILE or PBS_ENCRYPTION_PASSWORD_FD, or run on a terminal to be asked")
	ErrUnsupportedKDF     = errors.New("unsupported key derivation function")
	ErrPassphraseTooShort = fmt.Errorf("passphrase must be at least %d bytes", MinPassphraseLen)
)

// scryptMaxMem is the scrypt memory limit PBS gives OpenSSL (bytes).
const scryptMaxMem = 1025 << 20

// scryptMaxWork bounds n·r·p of a key file's scrypt parameters: 64 × the
// 65536·8·1 that proxmox-backup-client writes.
const scryptMaxWork = 64 * 65536 * 8

// ScryptParams are the scrypt parameters stored in a key file (§5.3).
type ScryptParams struct {
	N    uint64 `json:"n"`
	R    uint64 `json:"r"`
	P    uint64 `json:"p"`
	Salt b64    `json:"salt"`
}

// PBKDF2Params are the PBKDF2-HMAC-SHA256 parameters stored in a key file (§5.3).
type PBKDF2Params struct {
	Iter int `json:"iter"`
	Salt b64 `json:"salt"`
}

// KDF is the externally tagged key-derivation enum of a key file: exactly one
// field is set (§5.3).
type KDF struct {
	Scrypt *ScryptParams `json:"Scrypt,omitempty"`
	PBKDF2 *PBKDF2Params `json:"PBKDF2,omitempty"`
}

// UnmarshalJSON decodes the externally tagged enum. The tags are exactly
// "Scrypt" and "PBKDF2" (serde is case-sensitive; encoding/json would match
// "scrypt" or "pbkdf2" too), and exactly one must be present.
func (k *KDF) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if len(m) != 1 {
		return fmt.Errorf("%w: %s", ErrUnsupportedKDF, bytes.TrimSpace(data))
	}
	*k = KDF{}
	for tag, v := range m {
		switch tag {
		case "Scrypt":
			k.Scrypt = new(ScryptParams)
			return json.Unmarshal(v, k.Scrypt)
		case "PBKDF2":
			k.PBKDF2 = new(PBKDF2Params)
			return json.Unmarshal(v, k.PBKDF2)
		}
		return fmt.Errorf("%w %q", ErrUnsupportedKDF, tag)
	}
	return nil
}

// KeyFile is a PBS key file (encryption-key.json), §5.3. Data holds the raw
// key when KDF is nil, otherwise IV(16) || tag(16) || ciphertext(32).
type KeyFile struct {
	KDF         *KDF   `json:"kdf"`
	Created     string `json:"created"`
	Modified    string `json:"modified"`
	Data        b64    `json:"data"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Hint        string `json:"hint,omitempty"`
}

// b64 is standard base64 with padding on output, padding optional on input.
type b64 []byte

func (b b64) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

func (b *b64) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return fmt.Errorf("base64: %v", err)
	}
	*b = v
	return nil
}

// ParseKeyFile parses key-file JSON, or the text of a paper key (the JSON
// between its begin and end markers, written by package paperkey). Unknown fields are
// ignored; a kdf other than null, Scrypt or PBKDF2, or KDF parameters
// beyond the bounds (scrypt memory as PBS allows it and 64 × the usual
// work, PBKDF2 at most PBKDF2MaxIter iterations), returns
// ErrUnsupportedKDF; a paper key without its end marker returns ErrPaperKey.
func ParseKeyFile(data []byte) (*KeyFile, error) {
	data, err := paperKeyJSON(data)
	if err != nil {
		return nil, err
	}
	var raw struct {
		KDF json.RawMessage `json:"kdf"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse key file: %v", err)
	}
	var k KeyFile
	if err := json.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("parse key file: %w", err)
	}
	if k.KDF != nil && (k.KDF.Scrypt == nil) == (k.KDF.PBKDF2 == nil) {
		return nil, fmt.Errorf("parse key file: %w: %s", ErrUnsupportedKDF, bytes.TrimSpace(raw.KDF))
	}
	if k.KDF == nil && len(k.Data) != KeySize {
		return nil, fmt.Errorf("parse key file: unprotected key data is %d bytes, want %d", len(k.Data), KeySize)
	}
	if k.KDF != nil && len(k.Data) != IVSize+TagSize+KeySize {
		return nil, fmt.Errorf("parse key file: encrypted key data is %d bytes, want %d", len(k.Data), IVSize+TagSize+KeySize)
	}
	if err := k.checkKDF(); err != nil {
		return nil, fmt.Errorf("parse key file: %w", err)
	}
	return &k, nil
}

// NeedsPassphrase reports whether the key is protected by a KDF.
func (k *KeyFile) NeedsPassphrase() bool { return k.KDF != nil }

// PBKDF2MaxIter bounds a key file's PBKDF2 iteration count: 64 × the
// 65535 that proxmox-backup-client writes, as scryptMaxWork bounds scrypt.
const PBKDF2MaxIter = 64 * 65535

// checkKDF checks the KDF parameters against the bounds above, so that a
// key file cannot make the derivation take hours or exhaust memory. It is
// called by ParseKeyFile, before any passphrase is asked for.
func (k *KeyFile) checkKDF() error {
	switch {
	case k.KDF == nil:
		return nil
	case k.KDF.Scrypt != nil:
		p := k.KDF.Scrypt
		if p.N < 2 || p.N&(p.N-1) != 0 || p.R == 0 || p.P == 0 {
			return fmt.Errorf("%w: invalid scrypt parameters (n=%d r=%d p=%d)", ErrUnsupportedKDF, p.N, p.R, p.P)
		}
		// Memory as OpenSSL's EVP_PBE_scrypt counts it, against the maxmem
		// PBS passes (1025 MiB); larger values would abort the process with
		// an unrecoverable out-of-memory error inside scrypt.Key.
		if p.N > 1<<32 || p.R > 1<<20 || p.P > 1<<20 || 128*p.R*(p.N+2)+128*p.R*p.P > scryptMaxMem {
			return fmt.Errorf("%w: scrypt parameters too large (n=%d r=%d p=%d)", ErrUnsupportedKDF, p.N, p.R, p.P)
		}
		// Work grows with n·r·p: allow 64 times the work of the parameters
		// proxmox-backup-client writes (n=65536, r=8, p=1), not days of CPU.
		if p.N*p.R*p.P > scryptMaxWork {
			return fmt.Errorf("%w: scrypt parameters need too much work (n·r·p = %d > %d)", ErrUnsupportedKDF, p.N*p.R*p.P, uint64(scryptMaxWork))
		}
	default:
		p := k.KDF.PBKDF2
		if p.Iter <= 0 || p.Iter > PBKDF2MaxIter {
			return fmt.Errorf("%w: pbkdf2 iterations %d (want 1 to %d)", ErrUnsupportedKDF, p.Iter, PBKDF2MaxIter)
		}
	}
	return nil
}

// DeriveKEK derives the 32-byte key-encryption key from passphrase with the
// file's KDF parameters (bounded as ParseKeyFile checks them). It returns
// an error for a key file without KDF, and ctx.Err() as soon as ctx is
// done: the derivation (up to seconds of CPU) then finishes in the
// background and its result is dropped.
func (k *KeyFile) DeriveKEK(ctx context.Context, passphrase []byte) ([]byte, error) {
	if k.KDF == nil {
		return nil, errors.New("key file has no KDF")
	}
	if err := k.checkKDF(); err != nil {
		return nil, err
	}
	derive := func() ([]byte, error) {
		if p := k.KDF.Scrypt; p != nil {
			return scrypt.Key(passphrase, p.Salt, int(p.N), int(p.R), int(p.P), 32)
		}
		p := k.KDF.PBKDF2
		return pbkdf2.Key(sha256.New, string(passphrase), p.Salt, p.Iter, 32)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		kek []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		kek, err := derive()
		done <- result{kek, err}
	}()
	select {
	case r := <-done:
		return r.kek, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Open returns the raw key and its Config. passphrase is ignored for a key
// without KDF. Errors: ErrPassphraseNeeded (protected key, empty passphrase),
// ErrWrongPassphrase (GCM authentication failed), ErrKeyFingerprint (the
// stored fingerprint does not match the key), ctx.Err() when ctx ends the
// key derivation.
func (k *KeyFile) Open(ctx context.Context, passphrase []byte) ([KeySize]byte, *Config, error) {
	var key [KeySize]byte
	if want := k.dataLen(); len(k.Data) != want {
		return key, nil, fmt.Errorf("key file data is %d bytes, want %d", len(k.Data), want)
	}
	if k.KDF == nil {
		copy(key[:], k.Data)
	} else {
		if len(passphrase) == 0 {
			return key, nil, ErrPassphraseNeeded
		}
		kek, err := k.DeriveKEK(ctx, passphrase)
		if err != nil {
			return key, nil, err
		}
		block, err := aes.NewCipher(kek)
		if err != nil {
			return key, nil, err
		}
		aead, err := cipher.NewGCMWithNonceSize(block, IVSize)
		if err != nil {
			return key, nil, err
		}
		out, _, err := openGCM(aead, nil, k.Data[:IVSize], k.Data[IVSize:IVSize+TagSize], k.Data[IVSize+TagSize:], nil)
		if err != nil {
			return key, nil, ErrWrongPassphrase
		}
		if len(out) != KeySize {
			return key, nil, fmt.Errorf("decrypted key is %d bytes, want %d", len(out), KeySize)
		}
		copy(key[:], out)
	}
	cfg, err := NewConfig(key)
	if err != nil {
		return key, nil, err
	}
	if k.Fingerprint != "" {
		want, err := ParseFingerprint(k.Fingerprint)
		if err != nil {
			return key, nil, err
		}
		if want != cfg.Fingerprint() {
			return key, nil, fmt.Errorf("%w: file says %s, key has %s", ErrKeyFingerprint, want, cfg.Fingerprint())
		}
	}
	return key, cfg, nil
}

// dataLen is the length of Data: the raw key, or IV || tag || encrypted key.
func (k *KeyFile) dataLen() int {
	if k.KDF == nil {
		return KeySize
	}
	return IVSize + TagSize + KeySize
}

// RFC3339Local formats t the way PBS writes key-file times: local time with a
// numeric offset, never "Z", no fractional seconds (§5.3).
func RFC3339Local(t time.Time) string { return t.Format("2006-01-02T15:04:05-07:00") }

// NewKeyFile builds a key file for key. kdf is KDFScrypt (n=65536, r=8, p=1),
// KDFPBKDF2 (65535 iterations) or KDFNone; both KDFs use a random 32-byte salt
// and IV. A passphrase shorter than MinPassphraseLen is refused for a KDF.
func NewKeyFile(key [KeySize]byte, kdf string, passphrase []byte, now time.Time) (*KeyFile, error) {
	cfg, err := NewConfig(key)
	if err != nil {
		return nil, err
	}
	ts := RFC3339Local(now)
	k := &KeyFile{Created: ts, Modified: ts, Fingerprint: cfg.Fingerprint().String()}
	salt := make([]byte, 32)
	switch kdf {
	case KDFNone:
		k.Data = append(b64(nil), key[:]...)
		return k, nil
	case KDFScrypt:
		k.KDF = &KDF{Scrypt: &ScryptParams{N: 65536, R: 8, P: 1, Salt: salt}}
	case KDFPBKDF2:
		k.KDF = &KDF{PBKDF2: &PBKDF2Params{Iter: 65535, Salt: salt}}
	default:
		return nil, fmt.Errorf("%w %q (want scrypt, pbkdf2 or none)", ErrUnsupportedKDF, kdf)
	}
	if len(passphrase) < MinPassphraseLen {
		return nil, ErrPassphraseTooShort
	}
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	var iv [IVSize]byte
	if _, err := rand.Read(iv[:]); err != nil {
		return nil, err
	}
	if err := k.seal(key, passphrase, iv); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *KeyFile) seal(key [KeySize]byte, passphrase []byte, iv [IVSize]byte) error {
	kek, err := k.DeriveKEK(context.Background(), passphrase)
	if err != nil {
		return err
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return err
	}
	aead, err := cipher.NewGCMWithNonceSize(block, IVSize)
	if err != nil {
		return err
	}
	sealed := aead.Seal(nil, iv[:], key[:], nil)
	data := make([]byte, 0, IVSize+TagSize+KeySize)
	data = append(data, iv[:]...)
	data = append(data, sealed[KeySize:]...)
	data = append(data, sealed[:KeySize]...)
	k.Data = data
	return nil
}

// Marshal returns the key file as compact JSON in PBS field order
// (kdf, created, modified, data, fingerprint, hint).
func (k *KeyFile) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(k); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// GenerateKey returns 32 random bytes from the system RNG.
func GenerateKey() ([KeySize]byte, error) {
	var k [KeySize]byte
	_, err := rand.Read(k[:])
	return k, err
}
