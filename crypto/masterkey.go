package crypto

import (
	stdcrypto "crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/youmark/pkcs8"
)

// MasterKeyBits is the RSA modulus size proxmox-backup-client key
// create-master-key uses (§5.5).
const MasterKeyBits = 4096

// MinMasterKeyBits is the smallest RSA master key accepted: the key-file JSON
// (255 bytes) must fit in one PKCS#1 v1.5 block (modulus bytes - 11), which
// rules out RSA-2048.
const MinMasterKeyBits = 3072

// Errors of the master-key functions, wrapped with context.
var (
	ErrMasterKeyFormat     = errors.New("not an RSA master key in PEM form")
	ErrMasterKeyPassphrase = errors.New("wrong master key passphrase (private key decryption failed)")
	ErrRSAKeyBlob          = errors.New("RSA-encrypted key does not decrypt with this master key")
)

// GenerateMasterKey creates an RSA master key pair of bits bits (§5.5) and
// returns the public key as a "PUBLIC KEY" PEM (SubjectPublicKeyInfo, what
// master-public.pem holds) and the private key as an "ENCRYPTED PRIVATE KEY"
// PEM (PKCS#8, PBES2 with PBKDF2-HMAC-SHA256 and AES-256-CBC under
// passphrase, what master-private.pem holds; OpenSSL reads it). A passphrase
// shorter than MinPassphraseLen is refused.
func GenerateMasterKey(bits int, passphrase []byte) (pubPEM, privPEM []byte, err error) {
	if len(passphrase) < MinPassphraseLen {
		return nil, nil, ErrPassphraseTooShort
	}
	if bits < MinMasterKeyBits {
		return nil, nil, fmt.Errorf("RSA master key of %d bits: want at least %d", bits, MinMasterKeyBits)
	}
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	der, err := pkcs8.MarshalPrivateKey(priv, passphrase, &pkcs8.Opts{
		Cipher:  pkcs8.AES256CBC,
		KDFOpts: pkcs8.PBKDF2Opts{SaltSize: 16, IterationCount: 100000, HMACHash: stdcrypto.SHA256},
	})
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), nil
}

// ParseMasterPublicKey parses an RSA public key PEM: "PUBLIC KEY"
// (SubjectPublicKeyInfo, as PBS writes master-public.pem) or "RSA PUBLIC KEY"
// (PKCS#1). It returns ErrMasterKeyFormat for anything else and refuses keys
// shorter than MinMasterKeyBits.
func ParseMasterPublicKey(data []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrMasterKeyFormat)
	}
	var pub *rsa.PublicKey
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMasterKeyFormat, err)
		}
		var ok bool
		if pub, ok = k.(*rsa.PublicKey); !ok {
			return nil, fmt.Errorf("%w: a %T public key, not RSA", ErrMasterKeyFormat, k)
		}
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMasterKeyFormat, err)
		}
		pub = k
	default:
		return nil, fmt.Errorf("%w: PEM block %q, want \"PUBLIC KEY\"", ErrMasterKeyFormat, block.Type)
	}
	if pub.N.BitLen() < MinMasterKeyBits {
		return nil, fmt.Errorf("%w: %d bits, want at least %d", ErrMasterKeyFormat, pub.N.BitLen(), MinMasterKeyBits)
	}
	return pub, nil
}

// MasterPrivateKeyEncrypted reports whether the private-key PEM in data is
// passphrase-protected (PKCS#8 "ENCRYPTED PRIVATE KEY", or a traditional
// "RSA PRIVATE KEY" with a DEK-Info header).
func MasterPrivateKeyEncrypted(data []byte) bool {
	block, _ := pem.Decode(data)
	if block == nil {
		return false
	}
	_, dek := block.Headers["DEK-Info"]
	return block.Type == "ENCRYPTED PRIVATE KEY" || dek
}

// ParseMasterPrivateKey parses an RSA private key PEM as OpenSSL writes it:
// PKCS#8 ("ENCRYPTED PRIVATE KEY" with PBES2, or "PRIVATE KEY") or
// traditional ("RSA PRIVATE KEY", encrypted with a DEK-Info header or
// not). passphrase decrypts an encrypted one. Errors: ErrMasterKeyFormat,
// ErrMasterKeyPassphrase (wrong passphrase), ErrPassphraseNeeded.
func ParseMasterPrivateKey(data, passphrase []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrMasterKeyFormat)
	}
	if MasterPrivateKeyEncrypted(data) && len(passphrase) == 0 {
		return nil, ErrPassphraseNeeded
	}
	var key any
	var err error
	switch block.Type {
	case "ENCRYPTED PRIVATE KEY":
		key, _, err = pkcs8.ParsePrivateKey(block.Bytes, passphrase)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrMasterKeyPassphrase, err)
		}
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		der := block.Bytes
		if _, ok := block.Headers["DEK-Info"]; ok {
			//lint:ignore SA1019 the traditional OpenSSL PEM encryption is what older master-private.pem files use
			der, err = x509.DecryptPEMBlock(block, passphrase) //nolint:staticcheck
			if err != nil {
				return nil, fmt.Errorf("%w (%v)", ErrMasterKeyPassphrase, err)
			}
		}
		key, err = x509.ParsePKCS1PrivateKey(der)
		if err != nil && len(passphrase) > 0 {
			return nil, fmt.Errorf("%w (%v)", ErrMasterKeyPassphrase, err)
		}
	default:
		return nil, fmt.Errorf("%w: PEM block %q, want \"ENCRYPTED PRIVATE KEY\"", ErrMasterKeyFormat, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMasterKeyFormat, err)
	}
	priv, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: a %T private key, not RSA", ErrMasterKeyFormat, key)
	}
	return priv, nil
}

// UnprotectedKeyFile returns the key file of c's key without a KDF (the key
// in clear, §5.3), created at created (the original key file's time, kept as
// PBS keeps it) and modified now: the JSON that goes into
// rsa-encrypted.key.blob (§5.5).
func (c *Config) UnprotectedKeyFile(created string, now time.Time) *KeyFile {
	if created == "" {
		created = RFC3339Local(now)
	}
	return &KeyFile{
		Created:     created,
		Modified:    RFC3339Local(now),
		Data:        append(b64(nil), c.key[:]...),
		Fingerprint: c.fingerprint.String(),
	}
}

// RSAEncryptKeyFile encrypts the compact JSON of kf with RSA PKCS#1 v1.5
// under pub, as PBS's rsa_encrypt_key_config does (§5.5). The result is
// pub.Size() bytes (512 for RSA-4096): the payload of rsa-encrypted.key.blob.
func RSAEncryptKeyFile(pub *rsa.PublicKey, kf *KeyFile) ([]byte, error) {
	js, err := kf.Marshal()
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 PKCS#1 v1.5 is the format of rsa-encrypted.key.blob (§5.5)
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, pub, js) //nolint:staticcheck
	if err != nil {
		return nil, fmt.Errorf("RSA-encrypt the key file (%d bytes) under a %d-bit master key: %w", len(js), pub.N.BitLen(), err)
	}
	return ct, nil
}

// RSADecryptKeyFile decrypts ciphertext (the payload of
// rsa-encrypted.key.blob, priv.Size() bytes) with the master private key
// and parses the result as a key file (§5.5). It returns ErrRSAKeyBlob when
// the length is wrong or the decryption fails.
func RSADecryptKeyFile(priv *rsa.PrivateKey, ciphertext []byte) (*KeyFile, error) {
	if len(ciphertext) != priv.Size() {
		return nil, fmt.Errorf("%w: %d bytes, a %d-bit master key encrypts to %d", ErrRSAKeyBlob, len(ciphertext), priv.N.BitLen(), priv.Size())
	}
	//lint:ignore SA1019 PKCS#1 v1.5 is the format of rsa-encrypted.key.blob (§5.5)
	js, err := rsa.DecryptPKCS1v15(nil, priv, ciphertext) //nolint:staticcheck
	if err != nil {
		return nil, ErrRSAKeyBlob
	}
	kf, err := ParseKeyFile(js)
	if err != nil {
		return nil, fmt.Errorf("RSA-decrypted key: %w", err)
	}
	return kf, nil
}
