package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// ErrKeyUsage is wrapped by NewKeys's errors for key options that exclude
// each other or name no key where one is required: the command line must
// change (exit code 2).
var ErrKeyUsage = errors.New("key options")

// keyUsageError is a usage mistake in key options: it says only its
// message and matches ErrKeyUsage.
type keyUsageError string

// Error returns the message.
func (e keyUsageError) Error() string { return string(e) }

// Is matches ErrKeyUsage.
func (e keyUsageError) Is(target error) bool { return target == ErrKeyUsage }

// KeyOpener opens a key file or paper key at path and returns its key. It
// asks for the passphrase where one is needed (the terminal prompt, the
// environment); the key derivation stops when ctx ends.
type KeyOpener func(ctx context.Context, path string) (*crypto.Config, error)

// KeyOptions are the key policy of the commands that read snapshots
// (restore, drill, verify, mount, serve-nbd): which key file is opened,
// when, and what a manifest must prove.
type KeyOptions struct {
	// File is the key file or paper key given (--keyfile): opened at once
	// by NewKeys, so that a wrong passphrase stops before the work.
	File string
	// DefaultFile is the default key file (as proxmox-backup-client's),
	// opened only for a snapshot whose manifest needs a key (it names a
	// key fingerprint, a signature or an encrypted or signed file), and
	// only if it exists. "" has none.
	DefaultFile string
	// CryptMode is --crypt-mode: "" (File, else DefaultFile when a
	// manifest needs a key), "none" (no key at all: encrypted archives
	// fail, signatures are not checked) or "encrypt"/"sign-only" (a key
	// is required: File, or DefaultFile, which must exist).
	CryptMode string
	// NoDefault never opens DefaultFile (verify --crc-only); CryptMode
	// encrypt or sign-only without File overrides it.
	NoDefault bool
	// RequireSignature refuses a manifest that is not signed, or whose
	// signature cannot be checked for want of the key
	// (--require-signature); errors wrap index.ErrUnsigned.
	RequireSignature bool
	// AllowMissing reads a manifest that names a key without it (its
	// signature unchecked, Reader.KeyMissing reports it), as verify
	// --crc-only does; CryptMode "none" implies it.
	AllowMissing bool
	// Open opens key files; required when File or DefaultFile is opened.
	Open KeyOpener
	// Note receives notes and warnings, one line without "pbsdirect: "
	// and without a line end (the default key used, an unsigned manifest
	// read with a key); nil says nothing. It may be called from several
	// goroutines at once.
	Note func(msg string)
}

// Keys gives the readers of snapshots their key under the policy of
// KeyOptions, opening the default key file at most once, and only for a
// snapshot that needs a key. It is safe for concurrent use (verify checks
// several snapshots at once).
type Keys struct {
	ctx       context.Context // stops a key derivation (Ctrl-C)
	o         KeyOptions
	mu        sync.Mutex
	none      bool
	noDefault bool
	loaded    bool
	cc        *crypto.Config
	err       error         // opening the default key failed: said once, not asked again
	opening   time.Duration // spent opening key files (KDF, prompt)
}

// NewKeys checks o.CryptMode against o.File and opens o.File when given.
// Errors: one wrapping ErrKeyUsage for options that exclude each other or
// a required key that is missing; the opener's error for File.
func NewKeys(ctx context.Context, o KeyOptions) (*Keys, error) {
	k := &Keys{ctx: ctx, o: o, noDefault: o.NoDefault}
	switch o.CryptMode {
	case "":
	case "none":
		if o.File != "" {
			return nil, keyUsageError("--crypt-mode none and --keyfile exclude each other")
		}
		k.none = true
		return k, nil
	case "encrypt", "sign-only":
		if o.File == "" {
			if _, err := os.Stat(o.DefaultFile); o.DefaultFile == "" || err != nil {
				return nil, keyUsageError(fmt.Sprintf("--crypt-mode %s needs a key: give --keyfile (no default key file %s)", o.CryptMode, o.DefaultFile))
			}
			k.noDefault = false
		}
	default:
		return nil, keyUsageError(fmt.Sprintf("--crypt-mode must be none, encrypt or sign-only, not %q", o.CryptMode))
	}
	if o.File != "" {
		t0 := time.Now()
		cc, err := k.open(o.File)
		k.opening = time.Since(t0)
		if err != nil {
			return nil, err
		}
		k.cc, k.loaded = cc, true
	}
	return k, nil
}

// open opens path with the opener.
func (k *Keys) open(path string) (*crypto.Config, error) {
	if k.o.Open == nil {
		return nil, fmt.Errorf("key file %s: no way to open key files", path)
	}
	return k.o.Open(k.ctx, path)
}

// note says msg through KeyOptions.Note.
func (k *Keys) note(format string, args ...any) {
	if k.o.Note != nil {
		k.o.Note(fmt.Sprintf(format, args...))
	}
}

// None reports whether no key is used at all (CryptMode "none").
func (k *Keys) None() bool { return k.none }

// OpeningTime returns the time spent so far opening key files (the
// passphrase's key derivation, a prompt), which timings of the work leave
// out.
func (k *Keys) OpeningTime() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.opening
}

// OpenErr returns why the default key file could not be opened, or nil.
func (k *Keys) OpenErr() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// NeedsKey reports whether a manifest asks for a key: it names a key
// fingerprint or a signature (signed or encrypted), or lists an encrypted
// or signed file.
func NeedsKey(m *index.Manifest) bool {
	if _, has, _ := m.KeyFingerprint(); has || m.Signature != nil {
		return true
	}
	for _, f := range m.Files {
		if f.CryptMode == index.CryptEncrypt || f.CryptMode == index.CryptSignOnly {
			return true
		}
	}
	return false
}

// ForManifest returns the key for a snapshot with manifest m: the File
// key; else the DefaultFile's, opened (once) only when m needs a key; else
// nil. A default key file that failed to open fails every later snapshot
// that needs a key with the same error, without asking again.
func (k *Keys) ForManifest(m *index.Manifest) (*crypto.Config, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.none || k.loaded {
		return k.cc, nil
	}
	if k.noDefault || !NeedsKey(m) {
		// A plain snapshot needs no key, even after the default key
		// failed to open for another one.
		return nil, nil
	}
	if k.err != nil {
		return nil, k.err
	}
	def := k.o.DefaultFile
	if def == "" {
		return nil, nil
	}
	if _, err := os.Stat(def); err != nil {
		return nil, nil
	}
	k.note("using the default key file %s (give --keyfile to choose another, --crypt-mode none for no key)", def)
	t0 := time.Now()
	cc, err := k.open(def)
	k.opening += time.Since(t0)
	if err != nil {
		if errors.Is(err, crypto.ErrPassphraseNeeded) {
			err = fmt.Errorf("%w (or give --keyfile for another key, or --crypt-mode none for no key)", err)
		}
		k.err = err
		return nil, err
	}
	k.cc, k.loaded = cc, true
	return cc, nil
}

// Check picks the key for manifest m of snapshot snap (ForManifest) and
// checks m with it (index.Manifest.Check: fingerprint, signature), then
// applies the signature policy: with RequireSignature an unsigned
// manifest, or a signed one without the key to check it, fails wrapping
// index.ErrUnsigned; without it, an unsigned manifest read with a key is
// said as a warning (PBS accepts it too, but nothing proves it was
// written with the key). A manifest that names a key read without one
// (CryptMode none, AllowMissing) is said and returned with missing set.
// It returns the key (nil for none); errors name the manifest file.
func (k *Keys) Check(m *index.Manifest, snap index.Snapshot) (cc *crypto.Config, missing bool, err error) {
	cc, err = k.ForManifest(m)
	if err != nil {
		return nil, false, err
	}
	if err := m.Check(cc); err != nil {
		if !errors.Is(err, index.ErrMissingKey) || !(k.none || k.o.AllowMissing) {
			if errors.Is(err, index.ErrMissingKey) {
				err = fmt.Errorf("%w: give --keyfile with its key file or paper key (lost it? key import-with-master-key recovers it from a master key)", err)
			}
			return nil, false, fmt.Errorf("%s/%s: %w", snap.Dir(), ManifestName, err)
		}
		missing = true
		if k.none {
			k.note("--crypt-mode none: the manifest of %s names a key; its signature is not checked", snap)
		}
	}
	if err := k.CheckSigned(m, snap, cc); err != nil {
		return nil, false, err
	}
	return cc, missing, nil
}

// CheckSigned applies the signature policy (see Check) to manifest m of
// snap read with key cc; errors wrap index.ErrUnsigned.
func (k *Keys) CheckSigned(m *index.Manifest, snap index.Snapshot, cc *crypto.Config) error {
	switch {
	case k.o.RequireSignature && m.Signature == nil:
		return fmt.Errorf("%w: the manifest of %s has no signature (--require-signature)", index.ErrUnsigned, snap)
	case k.o.RequireSignature && cc == nil:
		return fmt.Errorf("%w: the manifest of %s is signed, but its signature is only checked with its key: give --keyfile (--require-signature)", index.ErrUnsigned, snap)
	case m.Signature == nil && cc != nil:
		k.note("warning: the manifest of %s is not signed: a key was given, but nothing proves the snapshot was written with it (--require-signature refuses such manifests)", snap)
	}
	return nil
}
