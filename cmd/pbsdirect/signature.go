package main

import (
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// registerRequireSignature adds --require-signature to fs (restore, drill, verify).
func registerRequireSignature(fs *flag.FlagSet) *bool {
	return fs.Bool("require-signature", false, "refuse a manifest that is not signed, or whose signature cannot be checked because no --keyfile is given (a key alone accepts unsigned manifests, with a warning)")
}

// checkSigned applies --require-signature (require) to manifest m of snap,
// which has passed m.Check(cc): without a signature, or without a key to
// check it by, it returns an error wrapping index.ErrUnsigned. Without
// require, an unsigned manifest read with a key only gets a warning on
// stderr: PBS accepts it too, but nothing proves it was written with the key.
func checkSigned(m *index.Manifest, snap index.Snapshot, cc *crypto.Config, require bool, stderr io.Writer) error {
	switch {
	case require && m.Signature == nil:
		return fmt.Errorf("%w: the manifest of %s has no signature (--require-signature)", index.ErrUnsigned, snap)
	case require && cc == nil:
		return fmt.Errorf("%w: the manifest of %s is signed, but its signature is only checked with its key: give --keyfile (--require-signature)", index.ErrUnsigned, snap)
	case m.Signature == nil && cc != nil:
		fmt.Fprintf(stderr, "pbsdirect: warning: the manifest of %s is not signed: a key was given, but nothing proves the snapshot was written with it (--require-signature refuses such manifests)\n", snap)
	}
	return nil
}
