// Package keys manages key files as proxmox-backup-client key does: it
// reads, creates and re-seals key files (AES-256 keys under a passphrase),
// names the files given by mistake where a key file goes, picks what a
// paper key prints, writes RSA master key pairs, and recovers a key
// encrypted under a master public key, from a file or from a snapshot of a
// store (rsa-encrypted.key.blob, read without any key). Passphrases and
// prompts are the caller's: this package is given the bytes.
//
// Errors of two classes are marked: ErrUsage (the command line must change:
// a key or passphrase file named that is not there, not a key file, a key
// file that exists already) and ErrWrite (a key file not written for a reason of the
// machine: no space, permission).
package keys

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/paperkey"
)

var (
	// ErrUsage is matched by the errors that the command line must change
	// to avoid: a file named that is not there or is not a key file, a
	// key file that would be overwritten, an unknown KDF.
	ErrUsage = errors.New("key file usage")
	// ErrWrite is matched by the errors of a key file not written for a
	// reason of the machine (no space, permission, I/O).
	ErrWrite = errors.New("key file not written")
	// ErrNotOpened is matched by the errors of a key file, paper key or
	// master key that was read and parsed but not opened: a wrong
	// passphrase (crypto.ErrWrongPassphrase, ErrMasterKeyPassphrase), a
	// stored fingerprint its key belies (crypto.ErrKeyFingerprint). It is
	// no damage of the data and no mistake of the command line: the run
	// could not complete for a reason outside the data (exit code 3); a
	// run with the right passphrase may.
	ErrNotOpened = errors.New("key not opened")
)

// NotOpened returns the error of opening the key file, paper key or
// master key name: for a wrong passphrase or a stored fingerprint its key
// belies, an ErrNotOpened error naming name, saying what to do and
// unwrapping to err; any other err (nil included) as "name: err", or nil.
func NotOpened(name string, err error) error {
	var advice string
	switch {
	case err == nil:
		return nil
	case errors.Is(err, crypto.ErrWrongPassphrase), errors.Is(err, crypto.ErrMasterKeyPassphrase):
		advice = "retry with the right passphrase"
	case errors.Is(err, crypto.ErrKeyFingerprint):
		advice = "the file is not the key it names: use the key file as key create or key paperkey wrote it"
	default:
		return fmt.Errorf("%s: %w", name, err)
	}
	return &classError{class: ErrNotOpened, msg: fmt.Sprintf("%s: %v: %s", name, err, advice), err: err}
}

// classError is an error of one class (ErrUsage or ErrWrite): it says msg
// and unwraps to its cause, when it has one.
type classError struct {
	class error
	msg   string
	err   error
}

// Error returns the message.
func (e *classError) Error() string { return e.msg }

// Unwrap returns the cause, or nil.
func (e *classError) Unwrap() error { return e.err }

// Is matches the class.
func (e *classError) Is(target error) bool { return target == e.class }

// usagef is an ErrUsage error saying the formatted message.
func usagef(format string, args ...any) error {
	return &classError{class: ErrUsage, msg: fmt.Sprintf(format, args...)}
}

// DefaultPath is where proxmox-backup-client keeps its default key:
// $XDG_CONFIG_HOME/proxmox-backup/encryption-key.json (or
// ~/.config/…), "encryption-key.json" when there is no configuration
// directory.
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "encryption-key.json"
	}
	return filepath.Join(dir, "proxmox-backup", "encryption-key.json")
}

// ReadFile reads a key, paper key or PEM file: a regular file of at most
// crypto.MaxSecretFileSize bytes (crypto.ReadSecretFile). A file that is
// not there is a usage mistake (ErrUsage, with the cause's text and cause).
func ReadFile(path string) ([]byte, error) {
	data, err := crypto.ReadSecretFile(path)
	return data, notThereUsage(err)
}

// notThereUsage returns err as an ErrUsage error (its text, err as cause)
// when it says a file named is not there (ENOENT, or ENOTDIR for a path
// through something that is no directory); any other err unchanged.
func notThereUsage(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &classError{class: ErrUsage, msg: err.Error(), err: err}
	}
	return err
}

// Load reads and parses the key file (or paper key) at path. Read errors
// say "key file: …" with the path; parse errors name the path. A file that
// is not there, a file of another kind given by mistake (NotAKeyFile) and
// one that does not parse as a key file are ErrUsage (the parse error is
// the cause), a paper key cut short (crypto.ErrPaperKey) too; an I/O
// error reading an existing file is not.
func Load(path string) (*crypto.KeyFile, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	kf, err := crypto.ParseKeyFile(data)
	if err != nil {
		if what := NotAKeyFile(data); what != "" {
			return nil, usagef("key file %s is %s, not a key file (as key create writes it)", path, what)
		}
		return nil, &classError{class: ErrUsage, msg: fmt.Sprintf("key file %s: %v", path, err), err: err}
	}
	return kf, nil
}

// NotAKeyFile names what data is when it is one of the other files of
// pbsdirect and PBS that are given by mistake where a key file goes ("" for
// anything else): an RSA master key or another PEM file, a DataBlob such as
// rsa-encrypted.key.blob.
func NotAKeyFile(data []byte) string {
	text := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(text, []byte("-----BEGIN ")) && !bytes.Contains(text, []byte(crypto.PaperKeyBegin)):
		return "a PEM file (an RSA master key? that goes to key import-with-master-key or backup --master-pubkey-file)"
	}
	if _, err := chunkstore.Kind(data); err == nil {
		return "a PBS blob (rsa-encrypted.key.blob? that goes to key import-with-master-key)"
	}
	return ""
}

// CheckKDF checks a key derivation name (--kdf): scrypt, pbkdf2 or none;
// another is ErrUsage.
func CheckKDF(kdf string) error {
	switch kdf {
	case crypto.KDFScrypt, crypto.KDFPBKDF2, crypto.KDFNone:
		return nil
	}
	return usagef("--kdf must be scrypt, pbkdf2 or none, not %q", kdf)
}

// KDFName names the key derivation of kf: crypto.KDFScrypt,
// crypto.KDFPBKDF2 or crypto.KDFNone.
func KDFName(kf *crypto.KeyFile) string {
	switch {
	case kf.KDF != nil && kf.KDF.Scrypt != nil:
		return crypto.KDFScrypt
	case kf.KDF != nil:
		return crypto.KDFPBKDF2
	}
	return crypto.KDFNone
}

// Write writes data to path with mode 0600 and syncs it, making its
// directory (0700) if needed: a new file (refusing to overwrite: ErrUsage)
// unless replace is set, when it replaces path atomically through a
// temporary file in the same directory. A failed write leaves no file
// behind and is ErrWrite.
func Write(path string, data []byte, replace bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	target := path
	if replace {
		target = path + ".tmp"
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) && !replace {
		return usagef("%s already exists: refusing to overwrite", path)
	}
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && replace {
		err = os.Rename(target, path)
	}
	if err != nil {
		os.Remove(target)
		err = fmt.Errorf("writing key file %s: %w", path, err)
		return &classError{class: ErrWrite, msg: err.Error(), err: err} // no space, permission: the machine
	}
	return nil
}

// Seal builds the key file of key with kdf and passphrase pass (nil for
// KDFNone), created at created (kept from the original key; "" for now)
// and modified now, with the password hint; it returns the file's bytes
// and the key file.
func Seal(key [crypto.KeySize]byte, kdf string, pass []byte, created, hint string) ([]byte, *crypto.KeyFile, error) {
	kf, err := crypto.NewKeyFile(key, kdf, pass, time.Now())
	if err != nil {
		return nil, nil, err
	}
	if created != "" {
		kf.Created = created
	}
	kf.Hint = hint
	data, err := kf.Marshal()
	return data, kf, err
}

// Create generates a new key, seals it with kdf and pass (Seal) and writes
// it as a new file at path (Write: an existing file is ErrUsage). It
// returns the key file written.
func Create(path, kdf string, pass []byte, hint string) (*crypto.KeyFile, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, err
	}
	data, kf, err := Seal(key, kdf, pass, "", hint)
	if err != nil {
		return nil, err
	}
	if err := Write(path, data, false); err != nil {
		return nil, err
	}
	return kf, nil
}

// Info is what key show prints of a key file.
type Info struct {
	Path        string `json:"path"`
	KDF         string `json:"kdf"`
	Created     string `json:"created"`
	Modified    string `json:"modified"`
	Fingerprint string `json:"fingerprint"`
	Hint        string `json:"hint,omitempty"`
	Verified    bool   `json:"verified"` // the key was decrypted and its fingerprint recomputed
}

// Describe returns the Info of the key file kf read from path, not
// verified: its fingerprint as stored.
func Describe(path string, kf *crypto.KeyFile) Info {
	return Info{Path: path, KDF: KDFName(kf), Created: kf.Created, Modified: kf.Modified, Fingerprint: kf.Fingerprint, Hint: kf.Hint}
}

// PaperText returns the paper key of the file data read from path, under
// the title subject (paperkey): a PEM master private key as numbered lines,
// a key file (or paper key) as the key file and its QR code. Errors name
// path.
func PaperText(path string, data []byte, subject string) ([]byte, error) {
	var (
		text []byte
		err  error
	)
	if _, perr := crypto.ParseMasterPrivateKey(data, nil); perr == nil || errors.Is(perr, crypto.ErrPassphraseNeeded) {
		text, err = paperkey.PrivateText(data, subject)
	} else {
		kf, kerr := crypto.ParseKeyFile(data)
		if kerr != nil {
			return nil, fmt.Errorf("%s: neither a PBS key file nor a PEM private master key: %w", path, kerr)
		}
		text, err = paperkey.Text(kf, subject)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return text, nil
}
