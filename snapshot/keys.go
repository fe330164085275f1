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
	// File is the key file or paper key given (one --keyfile): opened at
	// once by NewKeys, so that a wrong passphrase stops before the work,
	// and used for every manifest that names no key fingerprint.
	File string
	// Files are more key files or paper keys (several --keyfile, the key
	// files of a directory): each is opened only when a snapshot needs
	// it, chosen by the fingerprint it carries (Fingerprint) and the
	// manifest's. A manifest that needs a key and names no fingerprint
	// gets File, else the first of Files.
	Files []string
	// Fingerprint reads the key fingerprint a key file carries without
	// opening it (no passphrase): ok is false for a file that carries
	// none, which is opened only when a snapshot needs a key that no key
	// file carrying a fingerprint has. nil: no file's claim is read.
	// Errors (the file is not there, not a key file) fail NewKeys for File
	// and Files; the default key file is then taken as carrying none.
	Fingerprint func(path string) (fp crypto.Fingerprint, ok bool, err error)
	// DefaultFile is the default key file (as proxmox-backup-client's),
	// one more key of the set when it exists: opened only for a snapshot
	// whose manifest needs a key (it names a key fingerprint, a signature
	// or an encrypted or signed file) that no other key file has; without
	// File and Files, also for one that names no fingerprint. "" has none.
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
// KeyOptions: the key whose fingerprint the manifest names, opening each
// key file at most once, and only for a snapshot that needs it. It is safe
// for concurrent use (verify checks several snapshots at once).
type Keys struct {
	ctx       context.Context // stops a key derivation (Ctrl-C)
	o         KeyOptions
	mu        sync.Mutex
	none      bool
	noDefault bool
	loaded    bool           // File was opened: cc is its key
	cc        *crypto.Config // File's key
	slots     []*keySlot     // File, Files, then the default key file
	err       error          // the first key file that failed to open: said once, not asked again
	opening   time.Duration  // spent opening key files (KDF, prompt)
}

// NewKeys checks o.CryptMode against the key files given, reads the
// fingerprints they carry and opens o.File when given. Errors: one
// wrapping ErrKeyUsage for options that exclude each other or a required
// key that is missing; o.Fingerprint's for File and Files; the opener's
// for File.
func NewKeys(ctx context.Context, o KeyOptions) (*Keys, error) {
	k := &Keys{ctx: ctx, o: o, noDefault: o.NoDefault}
	given := o.File != "" || len(o.Files) > 0
	switch o.CryptMode {
	case "":
	case "none":
		if given {
			return nil, keyUsageError("--crypt-mode none and --keyfile exclude each other")
		}
		k.none = true
		return k, nil
	case "encrypt", "sign-only":
		if !given {
			if _, err := os.Stat(o.DefaultFile); o.DefaultFile == "" || err != nil {
				return nil, keyUsageError(fmt.Sprintf("--crypt-mode %s needs a key: give --keyfile (no default key file %s)", o.CryptMode, o.DefaultFile))
			}
			k.noDefault = false
		}
	default:
		return nil, keyUsageError(fmt.Sprintf("--crypt-mode must be none, encrypt or sign-only, not %q", o.CryptMode))
	}
	for _, f := range append([]string{o.File}, o.Files...) {
		if f == "" {
			continue
		}
		if err := k.addSlot(f, false, false); err != nil {
			return nil, err
		}
	}
	if def := o.DefaultFile; def != "" && !k.noDefault {
		if _, err := os.Stat(def); err == nil {
			k.addSlot(def, true, true) // tolerant: never fails
		}
	}
	if o.File != "" {
		s := k.slots[0]
		cc, err := k.openSlot(s)
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

// OpenErr returns why the first key file that failed to open (the default
// key file, one of Files) could not be opened, or nil.
func (k *Keys) OpenErr() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// given reports whether key files were given (KeyOptions.File or Files),
// not only the default key file.
func (k *Keys) given() bool { return k.o.File != "" || len(k.o.Files) > 0 }

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

// ForManifest returns the key for a snapshot with manifest m: for a
// manifest that names a key fingerprint, the key of that fingerprint
// (byFingerprint: chosen by the fingerprints the key files carry, opened
// once, only then), or a *KeyError when no key given is it (KeyMissing,
// KeyMismatch) or its key file could not be opened (KeyUnopened). For a
// manifest that names none: the File key; else, when m needs a key, the
// first of Files or else the default key file, opened (once) now; else
// nil; that key file not opened is a *KeyError (KeyUnopened, no
// fingerprint). CryptMode none gives nil for every manifest.
func (k *Keys) ForManifest(m *index.Manifest) (*crypto.Config, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.none {
		return nil, nil
	}
	if fp, has, _ := m.KeyFingerprint(); has {
		return k.byFingerprint(fp, m)
	}
	if k.loaded {
		return k.cc, nil
	}
	if !NeedsKey(m) || len(k.slots) == 0 {
		// A plain snapshot needs no key, even after a key file failed to
		// open for another one.
		return nil, nil
	}
	s := k.slots[0]
	cc, err := k.openSlot(s)
	if err != nil {
		// Not opened (a wrong passphrase): no damage, as for a manifest
		// that names its key.
		return nil, &KeyError{Status: KeyUnopened, SignOnly: signOnly(m), File: s.path, Err: err}
	}
	return cc, nil
}

// Check picks the key for manifest m of snapshot snap (ForManifest; a
// *KeyError when no key given opens it) and checks m with it (index.Manifest.Check: fingerprint, signature), then
// applies the signature policy: with RequireSignature an unsigned
// manifest, or a signed one without the key to check it, fails wrapping
// index.ErrUnsigned; without it, an unsigned manifest read with a key, or
// with key files given (CheckSigned), is said as a warning (PBS accepts it too, but nothing proves it was
// written with the key). A manifest that names a key read without one
// (CryptMode none, AllowMissing) is said and returned with missing set.
// It returns the key (nil for none); errors name the manifest file.
func (k *Keys) Check(m *index.Manifest, snap index.Snapshot) (cc *crypto.Config, missing bool, err error) {
	cc, err = k.ForManifest(m)
	var ke *KeyError
	if errors.As(err, &ke) && ke.Status != KeyUnopened && k.o.AllowMissing {
		cc, err = nil, nil // read without the key: m.Check says it is missing
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s/%s: %w", snap.Dir(), ManifestName, err)
	}
	if err := m.Check(cc); err != nil {
		if !errors.Is(err, index.ErrMissingKey) || !(k.none || k.o.AllowMissing) {
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
// snap read with key cc; errors wrap index.ErrUnsigned. An unsigned
// manifest is warned of when a key was given (--keyfile: one, several or
// a directory alike), even one read with no key (a plain snapshot), or
// read with a key (the default key file).
func (k *Keys) CheckSigned(m *index.Manifest, snap index.Snapshot, cc *crypto.Config) error {
	switch {
	case k.o.RequireSignature && m.Signature == nil:
		return fmt.Errorf("%w: the manifest of %s has no signature (--require-signature)", index.ErrUnsigned, snap)
	case k.o.RequireSignature && cc == nil:
		return fmt.Errorf("%w: the manifest of %s is signed, but its signature is only checked with its key: give --keyfile (--require-signature)", index.ErrUnsigned, snap)
	case m.Signature == nil && (cc != nil || k.given()):
		k.note("warning: the manifest of %s is not signed: a key was given, but nothing proves the snapshot was written with it (--require-signature refuses such manifests)", snap)
	}
	return nil
}
