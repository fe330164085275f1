package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// keySource gives restore, drill and verify their key only when a snapshot
// needs one. A key named with --keyfile is opened at once (checked before
// the work). The default key file (as proxmox-backup-client's) is opened
// only for a snapshot whose manifest is encrypted or signed (it names a
// key fingerprint), never for a plain one, and never with --crypt-mode
// none or when the command does not want it (verify --crc-only).
type keySource struct {
	ctx       context.Context // stops a key derivation (Ctrl-C)
	mu        sync.Mutex      // forManifest may be called concurrently (verify)
	sf        *storeFlags
	stderr    io.Writer
	none      bool // --crypt-mode none: no key at all
	noDefault bool // never open the default key file
	loaded    bool
	cc        *crypto.Config
	err       error         // opening the default key failed: said once, not asked again
	opening   time.Duration // spent opening key files (KDF, prompt): not part of a restore's time
}

// openingTime returns the time spent so far opening key files (the
// passphrase's key derivation, a prompt), which timings of the work leave
// out.
func (k *keySource) openingTime() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.opening
}

// registerCryptMode adds --crypt-mode (restore, drill, verify).
func registerCryptMode(fs *flag.FlagSet) *string {
	return fs.String("crypt-mode", "", "none: use no key (the default key file is not opened; encrypted archives fail, signatures are not checked); "+
		"encrypt or sign-only: a key is required (--keyfile or the default key file); default: --keyfile, or the default key file for encrypted or signed snapshots")
}

// newKeySource checks --crypt-mode against --keyfile and opens a key given
// with --keyfile.
func newKeySource(ctx context.Context, sf *storeFlags, cryptMode string, noDefault bool, stderr io.Writer) (*keySource, error) {
	k := &keySource{ctx: ctx, sf: sf, stderr: stderr, noDefault: noDefault}
	switch cryptMode {
	case "":
	case "none":
		if sf.keyfile != "" {
			return nil, usagef("--crypt-mode none and --keyfile exclude each other")
		}
		k.none = true
		return k, nil
	case "encrypt", "sign-only":
		if sf.keyfile == "" {
			if _, err := os.Stat(defaultKeyPath()); err != nil {
				return nil, usagef("--crypt-mode %s needs a key: give --keyfile (no default key file %s)", cryptMode, defaultKeyPath())
			}
			k.noDefault = false
		}
	default:
		return nil, usagef("--crypt-mode must be none, encrypt or sign-only, not %q", cryptMode)
	}
	if sf.keyfile != "" {
		t0 := time.Now()
		cc, err := openKeyFile(ctx, sf.keyfile, stderr)
		k.opening = time.Since(t0)
		if err != nil {
			return nil, err
		}
		k.cc, k.loaded = cc, true
	}
	return k, nil
}

// openErr returns why the default key file could not be opened, or nil.
func (k *keySource) openErr() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// needsKey reports whether a manifest asks for a key: it names a key
// fingerprint or a signature (signed or encrypted), or lists an encrypted
// file.
func needsKey(m *index.Manifest) bool {
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

// forManifest returns the key for a snapshot with manifest m: the
// --keyfile key; else the default key file's, opened (once) only when m
// needs a key; else nil.
func (k *keySource) forManifest(m *index.Manifest) (*crypto.Config, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.none || k.loaded {
		return k.cc, nil
	}
	if k.noDefault || !needsKey(m) {
		// A plain snapshot needs no key, even after the default key
		// failed to open for another one.
		return nil, nil
	}
	if k.err != nil {
		return nil, k.err
	}
	def := defaultKeyPath()
	if _, err := os.Stat(def); err != nil {
		return nil, nil
	}
	fmt.Fprintf(k.stderr, "pbsdirect: using the default key file %s (give --keyfile to choose another, --crypt-mode none for no key)\n", def)
	t0 := time.Now()
	cc, err := openKeyFile(k.ctx, def, k.stderr)
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
