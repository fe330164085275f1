package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/keys"
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
// environment or the terminal), notes go to stderr. One --keyfile naming a
// file is opened at once; several, or a directory (its key files, see
// keys.DirFiles; what it skips is said), make a set from which each
// snapshot gets the key its manifest's fingerprint names, each key file
// opened only when needed (keys.Fingerprint reads what a file carries).
// Options that exclude each other are usage errors. Notes name key files
// as a directory listing gave them: they are escaped (index.DisplayText).
func newKeys(ctx context.Context, sf *storeFlags, p keyPolicy, stderr io.Writer) (*snapshot.Keys, error) {
	note := func(msg string) { fmt.Fprintf(stderr, "pbsdirect: %s\n", index.DisplayText(msg)) }
	o := snapshot.KeyOptions{
		DefaultFile: defaultKeyPath(), CryptMode: p.cryptMode, NoDefault: p.noDefault,
		RequireSignature: p.requireSig, AllowMissing: p.noDefault,
		Fingerprint: keys.Fingerprint,
		Open:        func(ctx context.Context, path string) (*crypto.Config, error) { return openKeyFile(ctx, path, stderr) },
		Note:        note,
	}
	for _, f := range sf.keyfiles {
		if fi, err := os.Stat(f); err != nil || !fi.IsDir() {
			o.Files = append(o.Files, f)
			continue
		}
		files, skipped, err := keys.DirFiles(f)
		for _, s := range skipped {
			note(fmt.Sprintf("--keyfile %s: skipped %s", f, s))
		}
		if err != nil {
			return nil, usageOf(err)
		}
		o.Files = append(o.Files, files...)
	}
	if len(sf.keyfiles) == 1 && len(o.Files) == 1 && o.Files[0] == sf.keyfile {
		// One key file: opened at once, a wrong passphrase stops before
		// the work.
		o.File, o.Files = sf.keyfile, nil
	}
	k, err := snapshot.NewKeys(ctx, o)
	if errors.Is(err, snapshot.ErrKeyUsage) {
		return nil, usageOf(err)
	}
	return k, err
}

// keyfilesValue is --keyfile: every value in all, in order, the first
// also in first (backup and the key commands take one).
type keyfilesValue struct {
	first *string
	all   *[]string
}

// Set adds one --keyfile.
func (v *keyfilesValue) Set(s string) error {
	*v.all = append(*v.all, s)
	if len(*v.all) == 1 {
		*v.first = s
	}
	return nil
}

// String returns the values given, comma separated.
func (v *keyfilesValue) String() string {
	if v.all == nil {
		return ""
	}
	return strings.Join(*v.all, ",")
}

// Type names the value in help and completion: "stringArray", as pflag
// names --store's, for a flag that may be given several times.
func (v *keyfilesValue) Type() string { return "stringArray" }
