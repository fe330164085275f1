package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// registerCryptMode adds --crypt-mode (restore, drill, verify).
func registerCryptMode(fs *flag.FlagSet) *string {
	return fs.String("crypt-mode", "", "none: use no key (the default key file is not opened; encrypted archives fail, signatures are not checked); "+
		"encrypt or sign-only: a key is required (--keyfile or the default key file); default: --keyfile, or the default key file for encrypted or signed snapshots")
}

// registerRequireSignature adds --require-signature to fs (restore, drill, verify).
func registerRequireSignature(fs *flag.FlagSet) *bool {
	return fs.Bool("require-signature", false, "refuse a manifest that is not signed, or whose signature cannot be checked because no --keyfile is given (a key alone accepts unsigned manifests, with a warning)")
}

// keyPolicy is what a command's flags say about keys beyond --keyfile.
type keyPolicy struct {
	cryptMode  string // --crypt-mode
	noDefault  bool   // never open the default key file (verify --crc-only)
	requireSig bool   // --require-signature
}

// newKeys returns the snapshot key policy (snapshot.Keys) for --keyfile and
// p: key files are opened with openKeyFile (the passphrase from the
// environment or the terminal), notes go to stderr. A --keyfile is opened
// at once; options that exclude each other are usage errors.
func newKeys(ctx context.Context, sf *storeFlags, p keyPolicy, stderr io.Writer) (*snapshot.Keys, error) {
	k, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{
		File: sf.keyfile, DefaultFile: defaultKeyPath(), CryptMode: p.cryptMode, NoDefault: p.noDefault,
		RequireSignature: p.requireSig, AllowMissing: p.noDefault,
		Open: func(ctx context.Context, path string) (*crypto.Config, error) { return openKeyFile(ctx, path, stderr) },
		Note: func(msg string) { fmt.Fprintf(stderr, "pbsdirect: %s\n", msg) },
	})
	if errors.Is(err, snapshot.ErrKeyUsage) {
		return nil, usageOf(err)
	}
	return k, err
}
