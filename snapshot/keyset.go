package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// The statuses of a snapshot that no given key opens (KeyError.Status):
// not damage, the snapshot was not read for want of its key.
const (
	// KeyMissing: the manifest names a key fingerprint that no given key
	// has (by the fingerprints the key files carry, or their keys).
	KeyMissing = "key-missing"
	// KeyMismatch: a key file that carries no fingerprint was opened for
	// the snapshot and its key is another one.
	KeyMismatch = "key-mismatch"
	// KeyUnopened: no key file chosen for the snapshot could be opened as
	// its key (no or wrong passphrase, a fingerprint claim its key
	// belies).
	KeyUnopened = "key-error"
)

// KeyError says why a snapshot is not read: no given key is its key
// (KeyMissing, KeyMismatch) or its key file could not be opened
// (KeyUnopened). It is no damage of the data. It matches
// index.ErrMissingKey (KeyMissing) or index.ErrWrongKey (KeyMismatch) and
// unwraps to the opening error (KeyUnopened).
type KeyError struct {
	// Status is KeyMissing, KeyMismatch or KeyUnopened.
	Status string
	// Fingerprint is the key fingerprint the manifest names; zero when it
	// names none.
	Fingerprint crypto.Fingerprint
	// SignOnly is set when the snapshot's data is not encrypted, only
	// signed: --crypt-mode none reads it without checking the signature.
	SignOnly bool
	// File is the key file concerned (KeyUnopened), the first not opened
	// when several were tried; "" otherwise.
	File string
	// Given names the keys given, "file (fingerprint)" or "file (not
	// opened, no fingerprint)", for the message.
	Given []string
	// Err is the opening error (KeyUnopened), a *CandidatesError when
	// several key files were tried; nil otherwise.
	Err error
}

// Error says the status, the fingerprint, the keys given and what to do.
func (e *KeyError) Error() string {
	if e.Status == KeyUnopened {
		if e.Fingerprint == (crypto.Fingerprint{}) {
			return fmt.Sprintf("key not opened: %v", e.Err)
		}
		return fmt.Sprintf("key %s not opened: %v", e.Fingerprint, e.Err)
	}
	var b strings.Builder
	switch e.Status {
	case KeyMismatch:
		fmt.Fprintf(&b, "%v (key mismatch): the manifest was written with key %s; no given key is it", index.ErrWrongKey, e.Fingerprint)
	default:
		fmt.Fprintf(&b, "%v: the manifest names key %s, and no given key has it", index.ErrMissingKey, e.Fingerprint)
	}
	if len(e.Given) > 0 {
		fmt.Fprintf(&b, " (given: %s)", strings.Join(e.Given, ", "))
	}
	b.WriteString(": give --keyfile with its key file or paper key (lost it? key import-with-master-key recovers it from a master key)")
	if e.SignOnly {
		b.WriteString("; its data is not encrypted, only signed: --crypt-mode none reads it without checking the signature")
	}
	return b.String()
}

// Is matches index.ErrMissingKey for KeyMissing and index.ErrWrongKey for
// KeyMismatch.
func (e *KeyError) Is(target error) bool {
	return (e.Status == KeyMissing && target == index.ErrMissingKey) || (e.Status == KeyMismatch && target == index.ErrWrongKey)
}

// Unwrap returns the opening error (KeyUnopened), or nil.
func (e *KeyError) Unwrap() error { return e.Err }

// signOnly reports whether m names a key but lists no encrypted file: its
// data is only signed.
func signOnly(m *index.Manifest) bool {
	for _, f := range m.Files {
		if f.CryptMode == index.CryptEncrypt {
			return false
		}
	}
	return true
}

// keySlot is one key file of the set: its fingerprint claim, read without
// a passphrase, and once opened its key or error.
type keySlot struct {
	path      string
	isDefault bool               // the default key file
	claim     crypto.Fingerprint // the fingerprint the file says it has
	claimed   bool               // the file carries a fingerprint
	opened    bool               // opening was tried (at most once)
	cc        *crypto.Config
	err       error
}

// describe names s for messages: "file (fingerprint)", or "file (no
// fingerprint, not opened)".
func (s *keySlot) describe() string {
	switch {
	case s.cc != nil:
		return fmt.Sprintf("%s (%s)", s.path, s.cc.Fingerprint().Short())
	case s.claimed:
		return fmt.Sprintf("%s (%s)", s.path, s.claim.Short())
	case s.err != nil:
		return fmt.Sprintf("%s (could not be opened)", s.path)
	}
	return fmt.Sprintf("%s (no fingerprint, not opened)", s.path)
}

// addSlot adds path to the set unless it is there already, reading its
// fingerprint claim with KeyOptions.Fingerprint. A claim that cannot be
// read leaves the file unclaimed when tolerant (the default key file),
// else it is returned.
func (k *Keys) addSlot(path string, isDefault, tolerant bool) error {
	for _, s := range k.slots {
		if s.path == path {
			return nil
		}
	}
	s := &keySlot{path: path, isDefault: isDefault}
	if k.o.Fingerprint != nil {
		fp, ok, err := k.o.Fingerprint(path)
		if err != nil && !tolerant {
			return err
		}
		s.claim, s.claimed = fp, ok && err == nil
	}
	k.slots = append(k.slots, s)
	return nil
}

// openSlot opens s once (k.mu held): later calls return the same key or
// error without asking again. A key whose fingerprint is not the one the
// file claims fails wrapping crypto.ErrKeyFingerprint, naming the file.
func (k *Keys) openSlot(s *keySlot) (*crypto.Config, error) {
	if s.opened {
		return s.cc, s.err
	}
	if s.isDefault {
		k.note("using the default key file %s (give --keyfile to choose another, --crypt-mode none for no key)", s.path)
	}
	t0 := time.Now()
	cc, err := k.open(s.path)
	k.opening += time.Since(t0)
	s.opened = true
	switch {
	case err != nil:
		if s.isDefault && errors.Is(err, crypto.ErrPassphraseNeeded) {
			err = fmt.Errorf("%w (or give --keyfile for another key, or --crypt-mode none for no key)", err)
		}
		s.err = err
	case s.claimed && cc.Fingerprint() != s.claim:
		s.err = fmt.Errorf("key file %s: %w: the file says %s, its key is %s", s.path, crypto.ErrKeyFingerprint, s.claim, cc.Fingerprint())
	default:
		s.cc = cc
	}
	if s.err != nil && k.err == nil {
		k.err = s.err
	}
	return s.cc, s.err
}

// byFingerprint returns the key with fingerprint fp (k.mu held): a key
// opened already; else each key file that claims fp, in order, opened now
// until one opens and its key is fp (a wrong passphrase, a claim its key
// belies: the next is tried); else each key file that carries no
// fingerprint, opened in turn (said) until one is fp. Each key file is
// opened at most once per Keys. No key of fp is a KeyError (KeyMissing, or
// KeyMismatch when a key file without a fingerprint was opened and is
// another key); a key file that claims fp but could not be opened, or a
// key file without a fingerprint that could not be opened when no other
// was opened and found another key, is a KeyError (KeyUnopened) naming the
// first such file and unwrapping to the opener's error, or to a
// *CandidatesError naming every key file tried and why when there were
// several.
func (k *Keys) byFingerprint(fp crypto.Fingerprint, m *index.Manifest) (*crypto.Config, error) {
	for _, s := range k.slots {
		if s.cc != nil && s.cc.Fingerprint() == fp {
			return s.cc, nil
		}
	}
	var tried []*keySlot // the key files opened for fp, in order
	claimFailed, unclaimedFailed, mismatch := false, false, false
	for _, s := range k.slots {
		if s.claimed && s.claim == fp {
			if cc, err := k.openSlot(s); err == nil {
				return cc, nil // openSlot proved the claim
			}
			tried, claimFailed = append(tried, s), true
		}
	}
	// Key files without a fingerprint: the last resort.
	for _, s := range k.slots {
		if s.claimed {
			continue
		}
		if !s.opened {
			k.note("key file %s carries no fingerprint: opened to see whether it is key %s", s.path, fp.Short())
		}
		cc, err := k.openSlot(s)
		switch {
		case err != nil:
			unclaimedFailed = true
		case cc.Fingerprint() == fp:
			return cc, nil
		default:
			mismatch = true
		}
		tried = append(tried, s)
	}
	if claimFailed || unclaimedFailed && !mismatch {
		var first *keySlot
		errs := make([]error, 0, len(tried))
		files := make([]string, 0, len(tried))
		for _, s := range tried {
			files = append(files, s.path)
			if s.err == nil {
				errs = append(errs, &otherKeyError{path: s.path, fp: s.cc.Fingerprint()})
				continue
			}
			if first == nil {
				first = s
			}
			errs = append(errs, s.err)
		}
		err := first.err
		if len(errs) > 1 {
			err = &CandidatesError{Errs: errs, Files: files}
		}
		return nil, &KeyError{Status: KeyUnopened, Fingerprint: fp, SignOnly: signOnly(m), File: first.path, Err: err}
	}
	e := &KeyError{Status: KeyMissing, Fingerprint: fp, SignOnly: signOnly(m)}
	if mismatch {
		e.Status = KeyMismatch
	}
	for _, s := range k.slots {
		e.Given = append(e.Given, s.describe())
	}
	return nil, e
}

// CandidatesError says why none of several key files tried for a key
// opened as it: each one's error (a wrong passphrase, a fingerprint claim
// its key belies, another key), in the order tried. It unwraps to them all.
type CandidatesError struct {
	// Errs holds one error per key file tried, each naming its file.
	Errs []error
	// Files holds the key file of each of Errs, in the same order.
	Files []string
}

// Error names every key file tried and why it is not the key.
func (e *CandidatesError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("none of the %d key files tried opens as it: %s", len(e.Errs), strings.Join(msgs, "; "))
}

// Unwrap returns the errors of the key files tried.
func (e *CandidatesError) Unwrap() []error { return e.Errs }

// The reasons a key file tried for a snapshot is not its key
// (KeyFileFailure.Reason).
const (
	// KeyReasonPassphrase: the passphrase was refused (wrong or none).
	KeyReasonPassphrase = "passphrase-refused"
	// KeyReasonClaim: the file opened, and its key is not the one whose
	// fingerprint it names.
	KeyReasonClaim = "not-the-key-it-names"
	// KeyReasonOtherKey: the file carries no fingerprint, opened, and is
	// another key.
	KeyReasonOtherKey = "another-key"
	// KeyReasonUnopened: the file could not be opened for another reason
	// (unreadable, not a key file, no passphrase given).
	KeyReasonUnopened = "not-opened"
)

// KeyFileFailure is one key file tried for a snapshot and why it is not
// its key.
type KeyFileFailure struct {
	File   string // the key file as given
	Reason string // KeyReasonPassphrase, KeyReasonClaim, KeyReasonOtherKey or KeyReasonUnopened
	Err    error  // the file's own error
}

// Tried returns each key file tried for e's snapshot (KeyUnopened) with
// its own reason, in the order tried: every candidate of a
// *CandidatesError, else the one File; nil for the other statuses.
func (e *KeyError) Tried() []KeyFileFailure {
	if e.Status != KeyUnopened {
		return nil
	}
	var ce *CandidatesError
	if errors.As(e.Err, &ce) && len(ce.Files) == len(ce.Errs) {
		out := make([]KeyFileFailure, len(ce.Errs))
		for i, err := range ce.Errs {
			out[i] = KeyFileFailure{File: ce.Files[i], Reason: keyReason(err), Err: err}
		}
		return out
	}
	return []KeyFileFailure{{File: e.File, Reason: keyReason(e.Err), Err: e.Err}}
}

// keyReason classifies a key file's own error (byFingerprint's).
func keyReason(err error) string {
	var ce *CandidatesError
	switch {
	case errors.As(err, &ce):
		return KeyReasonUnopened // not one file's error
	case errors.Is(err, crypto.ErrWrongPassphrase):
		return KeyReasonPassphrase
	case errors.Is(err, crypto.ErrKeyFingerprint):
		return KeyReasonClaim
	case errors.Is(err, errOtherKey):
		return KeyReasonOtherKey
	}
	return KeyReasonUnopened
}

// errOtherKey marks a key file without a fingerprint that opened as
// another key.
var errOtherKey = errors.New("another key")

// otherKeyError is a key file without a fingerprint that opened as
// another key (fp). It matches errOtherKey.
type otherKeyError struct {
	path string
	fp   crypto.Fingerprint
}

func (e *otherKeyError) Error() string {
	return fmt.Sprintf("key file %s carries no fingerprint and is key %s", e.path, e.fp.Short())
}

func (e *otherKeyError) Is(target error) bool { return target == errOtherKey }
