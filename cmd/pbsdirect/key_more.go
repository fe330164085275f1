package main

import (
	"bytes"
	flag "github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/paperkey"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Names of the master key files key create-master-key writes in the current
// directory, as proxmox-backup-client (§5.5).
const (
	masterPublicName  = "master-public.pem"
	masterPrivateName = "master-private.pem"
)

// keyPathArg returns the key file PATH argument at position i of args, or
// the default key file when it is not given.
func keyPathArg(args []string, i int) string {
	if len(args) > i {
		return args[i]
	}
	return defaultKeyPath()
}

// readKeyFile reads and parses the key file (or paper key) at path. Read
// errors say "key file: …" with the path; parse errors name the path.
func readKeyFile(path string) (*crypto.KeyFile, error) {
	data, err := readSmallFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	kf, err := crypto.ParseKeyFile(data)
	if err != nil {
		if what := notAKeyFile(data); what != "" {
			return nil, usagef("key file %s is %s, not a key file (as key create writes it)", path, what)
		}
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return kf, nil
}

// notAKeyFile names what data is when it is one of the other files of
// pbsdirect and PBS that are given by mistake where a key file goes ("" for
// anything else): an RSA master key or another PEM file, a DataBlob such as
// rsa-encrypted.key.blob.
func notAKeyFile(data []byte) string {
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

// readSmallFile reads a key, paper key or PEM file: a regular file of at
// most crypto.MaxSecretFileSize bytes (crypto.ReadSecretFile).
// A file that is not there is a usage mistake (exit 2).
func readSmallFile(path string) ([]byte, error) {
	data, err := crypto.ReadSecretFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usageOf(err)
	}
	return data, err
}

// newPassphrase returns the new passphrase for a key: the first line of
// file when given, else asked twice on the terminal (prompt). Without
// either it is a usage error naming flagName and the alternative (or "").
func newPassphrase(flagName, file, prompt, alternative string) ([]byte, error) {
	if file != "" {
		return secretFromFile(flagName, file)
	}
	p, err := askPassphrase(prompt, true)
	if errors.Is(err, crypto.ErrPassphraseNeeded) {
		return nil, usagef("no terminal to ask for the new passphrase: give %s%s", flagName, alternative)
	}
	return p, err
}

// parseKDF checks a --kdf value.
func parseKDF(kdf string) error {
	switch kdf {
	case crypto.KDFScrypt, crypto.KDFPBKDF2, crypto.KDFNone:
		return nil
	}
	return usagef("--kdf must be scrypt, pbkdf2 or none, not %q", kdf)
}

// writeKeyFile writes data to path with mode 0600 and syncs it: a new file
// (refusing to overwrite: a usage error) unless replace is set, when it
// replaces path atomically through a temporary file in the same directory.
// A failed write leaves no file behind and lies outside the data (exit 3).
func writeKeyFile(path string, data []byte, replace bool) error {
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
		return &outsideError{fmt.Errorf("writing key file %s: %w", path, err)} // no space, permission: the machine
	}
	return nil
}

// sealKey builds the key file of key with kdf and passphrase, created at
// created (kept from the original key) and modified now.
func sealKey(key [crypto.KeySize]byte, kdf string, pass []byte, created, hint string) ([]byte, *crypto.KeyFile, error) {
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

func cmdKeyChangePassphrase(fs *flag.FlagSet) commandFunc {
	kdf := fs.String("kdf", crypto.KDFScrypt, "key derivation for the new passphrase: scrypt, pbkdf2 or none (none stores the key unprotected)")
	hint := fs.String("hint", "", "password hint stored in the key file")
	newFile := fs.String("new-passphrase-file", "", "read the new passphrase from the first line of this file (default: asked twice on the terminal)")
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		if fs.NArg() > 1 {
			return usagef("want at most one PATH")
		}
		if err := parseKDF(*kdf); err != nil {
			return err
		}
		path := keyPathArg(fs.Args(), 0)
		kf, err := readKeyFile(path)
		if err != nil {
			return err
		}
		var old []byte
		if kf.NeedsPassphrase() {
			if old, err = passphrase("Encryption Key Password: ", false, stderr); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		key, cfg, err := kf.Open(ctx, old)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var pass []byte
		if *kdf != crypto.KDFNone {
			if pass, err = newPassphrase("--new-passphrase-file", *newFile, "New Password: ", ", or --kdf none"); err != nil {
				return err
			}
		}
		out, _, err := sealKey(key, *kdf, pass, kf.Created, *hint)
		if err != nil {
			return err
		}
		if err := writeKeyFile(path, out, true); err != nil {
			return err
		}
		return printKeyResult(stdout, "changed the passphrase of key file", path, *kdf, cfg.Fingerprint())
	}
}

// printKeyResult prints what a key command wrote (text or JSON).
func printKeyResult(stdout io.Writer, what, path, kdf string, fp crypto.Fingerprint) error {
	if outputJSON(stdout) {
		return writeJSON(stdout, map[string]string{"path": path, "kdf": kdf, "fingerprint": fp.String()})
	}
	fmt.Fprintf(stdout, "%s %s (kdf %s), fingerprint %s\n", what, path, kdf, fp)
	return nil
}

func cmdKeyPaperkey(fs *flag.FlagSet) commandFunc {
	subject := fs.String("subject", "", "title printed above the key (e.g. the host name)")
	format := fs.String("output-format", "text", "paper key format: text, with QR codes as qrencode utf8i text (the html form of proxmox-backup-client is not made)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() > 1 {
			return usagef("want at most one PATH")
		}
		if *format != "text" {
			return usagef("--output-format for a paper key must be text, not %q", *format)
		}
		textOnly(stdout)
		path := keyPathArg(fs.Args(), 0)
		data, err := readSmallFile(path)
		if err != nil {
			return err
		}
		var text []byte
		if _, perr := crypto.ParseMasterPrivateKey(data, nil); perr == nil || errors.Is(perr, crypto.ErrPassphraseNeeded) {
			text, err = paperkey.PrivateText(data, *subject)
		} else {
			kf, kerr := crypto.ParseKeyFile(data)
			if kerr != nil {
				return fmt.Errorf("%s: neither a PBS key file nor a PEM private master key: %w", path, kerr)
			}
			text, err = paperkey.Text(kf, *subject)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		_, err = stdout.Write(text)
		return err
	}
}

func cmdKeyCreateMasterKey(fs *flag.FlagSet) commandFunc {
	bits := fs.Int("bits", crypto.MasterKeyBits, fmt.Sprintf("RSA key size in bits (at least %d)", crypto.MinMasterKeyBits))
	passFile := fs.String("master-passphrase-file", "", "read the master key passphrase from the first line of this file (default: asked twice on the terminal)")
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		if fs.NArg() != 0 {
			return usagef("key create-master-key takes no arguments: it writes %s and %s in the current directory", masterPublicName, masterPrivateName)
		}
		if *bits < crypto.MinMasterKeyBits {
			return usagef("--bits must be at least %d, not %d", crypto.MinMasterKeyBits, *bits)
		}
		for _, name := range []string{masterPublicName, masterPrivateName} {
			if _, err := os.Stat(name); err == nil {
				return usagef("%s already exists: refusing to overwrite", name)
			}
		}
		pass, err := newPassphrase("--master-passphrase-file", *passFile, "Master Key Password: ", "")
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Generating %d-bit RSA key..\n", *bits)
		pub, priv, err := crypto.GenerateMasterKey(*bits, pass)
		if err != nil {
			return err
		}
		if err := writeKeyFile(masterPublicName, pub, false); err != nil {
			return err
		}
		if err := writeKeyFile(masterPrivateName, priv, false); err != nil {
			os.Remove(masterPublicName)
			return err
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, map[string]any{"public": masterPublicName, "private": masterPrivateName, "bits": *bits})
		}
		fmt.Fprintf(stdout, "wrote the public master key to %s and the private master key (passphrase-protected) to %s: keep %s offline\n", masterPublicName, masterPrivateName, masterPrivateName)
		return nil
	}
}

func cmdKeyImportWithMasterKey(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.registerLocation(fs)
	kdf := fs.String("kdf", crypto.KDFScrypt, "key derivation for the imported key file: scrypt, pbkdf2 or none (none stores the key unprotected)")
	hint := fs.String("hint", "", "password hint stored in the key file")
	passFile := fs.String("master-passphrase-file", "", "read the master key passphrase from the first line of this file (default: asked on the terminal)")
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		if fs.NArg() < 2 || fs.NArg() > 3 {
			return usagef("want ENCRYPTED-KEY MASTER-KEY [PATH], got %d argument(s)", fs.NArg())
		}
		if err := parseKDF(*kdf); err != nil {
			return err
		}
		path := keyPathArg(fs.Args(), 2)
		if _, err := os.Stat(path); err == nil {
			return usagef("key file %s already exists: refusing to overwrite", path)
		}
		var (
			ct     []byte
			wantFP *crypto.Fingerprint
			err    error
		)
		if len(sf.stores) > 0 {
			sf.store = sf.stores[0]
			ct, wantFP, err = readRSAKeyBlob(ctx, &sf, fs.Arg(0), stderr)
		} else {
			ct, err = readRSAKeyFile(fs.Arg(0))
			if errors.Is(err, os.ErrNotExist) && checkSnapshotRef(fs.Arg(0)) == nil {
				return usagef("ENCRYPTED-KEY %s: no such file; to read it from that snapshot, give --store (and --ns)", fs.Arg(0))
			}
		}
		if err != nil {
			return err
		}
		pem, err := readSmallFile(fs.Arg(1))
		if err != nil {
			return err
		}
		var mpass []byte
		if crypto.MasterPrivateKeyEncrypted(pem) {
			if *passFile != "" {
				mpass, err = secretFromFile("--master-passphrase-file", *passFile)
			} else if mpass, err = askPassphrase("Master Key Password: ", false); errors.Is(err, crypto.ErrPassphraseNeeded) {
				err = usagef("%s is passphrase-protected and there is no terminal to ask on: give --master-passphrase-file", fs.Arg(1))
			}
			if err != nil {
				return err
			}
		}
		priv, err := crypto.ParseMasterPrivateKey(pem, mpass)
		if err != nil {
			return fmt.Errorf("%s: %w", fs.Arg(1), err)
		}
		kf, err := crypto.RSADecryptKeyFile(priv, ct)
		if err != nil {
			return fmt.Errorf("%s with %s: %w", fs.Arg(0), fs.Arg(1), err)
		}
		key, cfg, err := kf.Open(ctx, nil)
		if err != nil {
			return fmt.Errorf("%s: recovered key: %w", fs.Arg(0), err)
		}
		if wantFP != nil && *wantFP != cfg.Fingerprint() {
			return fmt.Errorf("%s: %w: recovered key %s, but the snapshot's manifest names key %s", fs.Arg(0), index.ErrWrongKey, cfg.Fingerprint(), wantFP)
		}
		var pass []byte
		if *kdf != crypto.KDFNone {
			pass, err = passphrase("New Password: ", true, stderr)
			if errors.Is(err, crypto.ErrPassphraseNeeded) {
				return usagef("a passphrase is needed for --kdf %s and there is no terminal to ask on: set PBS_ENCRYPTION_PASSWORD or PBS_ENCRYPTION_PASSWORD_FILE, or use --kdf none", *kdf)
			}
			if err != nil {
				return err
			}
		}
		out, _, err := sealKey(key, *kdf, pass, kf.Created, *hint)
		if err != nil {
			return err
		}
		if err := writeKeyFile(path, out, false); err != nil {
			return err
		}
		return printKeyResult(stdout, "imported the key into", path, *kdf, cfg.Fingerprint())
	}
}

// readRSAKeyFile reads an RSA-encrypted key from a file: the blob payload
// as proxmox-backup-client restores it, or rsa-encrypted.key.blob copied
// from a snapshot directory (a plain DataBlob, decoded and CRC-checked here).
func readRSAKeyFile(name string) ([]byte, error) {
	data, err := readSmallFile(name)
	if err != nil {
		return nil, err
	}
	if kind, kerr := chunkstore.Kind(data); kerr == nil {
		if kind.Encrypted() {
			return nil, fmt.Errorf("%s: an AES-encrypted blob, not the RSA-encrypted key", name)
		}
		return decodePlainBlob(name, data)
	}
	return data, nil
}

// readRSAKeyBlob reads rsa-encrypted.key.blob of snapshot ref from the
// store, without the key: the manifest is read without key checks, the blob
// checked against its size and SHA-256 in the manifest and decoded (it is a
// plain blob, §5.5). It returns the payload and the manifest's key
// fingerprint, when it names one.
func readRSAKeyBlob(ctx context.Context, sf *storeFlags, ref string, stderr io.Writer) ([]byte, *crypto.Fingerprint, error) {
	if err := checkSnapshotRef(ref); err != nil {
		return nil, nil, err
	}
	nsa, err := sf.nsArg()
	if err != nil {
		return nil, nil, err
	}
	store, err := openStore(ctx, sf, false, 4)
	if err != nil {
		return nil, nil, err
	}
	defer store.Close()
	warnDisagreement(stderr, store)
	ns, err := nsa.resolve(ctx, store, false)
	if err != nil {
		return nil, nil, err
	}
	// The manifest is read without key checks: the key is what is lost.
	src, err := snapshot.Open(ctx, store, ns, ref, nil)
	if err != nil {
		return nil, nil, err
	}
	snap, m := src.Snapshot(), src.Manifest()
	if _, err := m.File(index.RSAKeyBlobName); err != nil {
		if group, _ := index.ParseSnapshotRef(ref); group.IsGroup() {
			// TYPE/ID: the newest snapshot of the group that has the key.
			latest := snap
			lfp, latestHas, _ := m.KeyFingerprint()
			if src, err = newestWithRSAKey(ctx, store, ns, snap); err != nil {
				return nil, nil, err
			}
			snap, m = src.Snapshot(), src.Manifest()
			fmt.Fprintf(stderr, "pbsdirect: the latest snapshot of %s has no %s: reading it from %s\n", ref, index.RSAKeyBlobName, snap)
			if fp, has, _ := m.KeyFingerprint(); latestHas && (!has || fp != lfp) {
				fmt.Fprintf(stderr, "pbsdirect: warning: %s was made with another key (%s) than %s: the key recovered does not open it\n", latest, lfp.Short(), snap)
			}
		} else {
			return nil, nil, fmt.Errorf("snapshot %s has no %s: it was not backed up with a master public key (--master-pubkey-file)", snap, index.RSAKeyBlobName)
		}
	}
	raw, err := src.CheckedBlob(ctx, index.RSAKeyBlobName)
	if err != nil {
		return nil, nil, err
	}
	ct, err := decodePlainBlob(path.Join(snap.Dir(), index.RSAKeyBlobName), raw)
	if err != nil {
		return nil, nil, err
	}
	var want *crypto.Fingerprint
	if fp, ok, err := m.KeyFingerprint(); err == nil && ok {
		want = &fp
	}
	return ct, want, nil
}

// newestWithRSAKey returns the newest snapshot of latest's group (latest
// being its newest) whose manifest lists rsa-encrypted.key.blob, with that
// manifest read without key checks; an error naming the group when none
// has it.
func newestWithRSAKey(ctx context.Context, store chunkstore.Store, ns index.Namespace, latest index.Snapshot) (*snapshot.Reader, error) {
	list, err := snapshot.List(ctx, store, ns)
	if err != nil {
		return nil, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		s := list[i].Snapshot
		if s.Type != latest.Type || s.ID != latest.ID {
			continue
		}
		r, err := snapshot.OpenSnapshot(ctx, store, s, nil)
		if err != nil {
			continue // pruned meanwhile, or unreadable: an older one may do
		}
		if _, err := r.File(index.RSAKeyBlobName); err == nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no snapshot of %s has %s: none was backed up with a master public key (--master-pubkey-file)", latest.GroupDir(), index.RSAKeyBlobName)
}

// decodePlainBlob decodes an unencrypted DataBlob (CRC checked).
func decodePlainBlob(name string, raw []byte) ([]byte, error) {
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	data, _, err := dec.Decode(nil, raw, nil, crypto.MaxSecretFileSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// rsaEncryptedKey encrypts the key cc (opened from keyfile, or the default
// key file when keyfile is "") under the master public key in pubFile, as
// proxmox-backup-client does for rsa-encrypted.key.blob (§5.5): the key in
// clear, with the key file's creation time, RSA PKCS#1 v1.5-encrypted.
func rsaEncryptedKey(pubFile, keyfile string, cc *crypto.Config) ([]byte, error) {
	data, err := readSmallFile(pubFile)
	if err != nil {
		return nil, fmt.Errorf("--master-pubkey-file: %w", err)
	}
	pub, err := crypto.ParseMasterPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("--master-pubkey-file %s: %w", pubFile, err)
	}
	if keyfile == "" {
		keyfile = defaultKeyPath()
	}
	var created string
	if kd, err := readSmallFile(keyfile); err == nil {
		if kf, err := crypto.ParseKeyFile(kd); err == nil {
			created = kf.Created
		}
	}
	return crypto.RSAEncryptKeyFile(pub, cc.UnprotectedKeyFile(created, time.Now()))
}

// keyChangePassphraseCommand is 'pbsdirect key change-passphrase'.
func keyChangePassphraseCommand() commandSpec {
	return commandSpec{
		use:   "change-passphrase [flags] [PATH]",
		short: "re-encrypt a key file under a new passphrase",
		long: `Re-encrypt a key file under a new passphrase (or none with --kdf none); the
key itself, and so its fingerprint, does not change.`,
		example: `  pbsdirect key change-passphrase /root/enc.key`,
		build:   cmdKeyChangePassphrase,
	}
}

// keyPaperkeyCommand is 'pbsdirect key paperkey'.
func keyPaperkeyCommand() commandSpec {
	return commandSpec{
		use:   "paperkey [flags] [PATH]",
		short: "print a key file as a paper key",
		long: `Print a key file as a paper key (text) to keep offline, as proxmox-backup-client
key paperkey --output-format text does: the key file between BEGIN and END
lines, then its QR code in text form. The text is accepted wherever a key file
is (--keyfile), by pbsdirect and by PBS; the QR code scans back to the key file.
A PEM master private key prints as numbered lines, a QR code every five lines.`,
		example: `  pbsdirect key paperkey --subject "$(hostname)" /root/enc.key > enc.paperkey.txt`,
		build:   cmdKeyPaperkey,
	}
}

// keyCreateMasterKeyCommand is 'pbsdirect key create-master-key'.
func keyCreateMasterKeyCommand() commandSpec {
	return commandSpec{
		use:   "create-master-key [flags]",
		short: "create an RSA master key pair",
		long: `Create an RSA master key pair in the current directory: master-public.pem (give
it to backup --master-pubkey-file) and master-private.pem (passphrase-protected;
keep it offline: it recovers every key stored under the public key). Existing
files are never overwritten.`,
		example:  `  pbsdirect key create-master-key   # in the current directory, e.g. a USB stick`,
		build:    cmdKeyCreateMasterKey,
		complete: completeNothing,
	}
}

// keyImportWithMasterKeyCommand is 'pbsdirect key import-with-master-key'.
func keyImportWithMasterKeyCommand() commandSpec {
	return commandSpec{
		use:   "import-with-master-key [flags] ENCRYPTED-KEY MASTER-KEY [PATH]",
		short: "recover a key file with the RSA master key",
		long: `Recover a key file with the RSA master private key. ENCRYPTED-KEY is either a
snapshot of --store (TYPE/ID/TIME, or TYPE/ID: the newest snapshot of the group
that has the key), whose rsa-encrypted.key.blob is read without any key, or the
path of an rsa-encrypted.key.blob file; MASTER-KEY is master-private.pem (its
passphrase from --master-passphrase-file or the terminal). The recovered key is
written to PATH (default: the default key file) under a new passphrase, from
PBS_ENCRYPTION_PASSWORD, _FILE or _FD, or asked twice on the terminal (--kdf
none: unprotected).`,
		example: `  pbsdirect key import-with-master-key --store /mnt/ds vm/100/2026-11-29T10:00:00Z master-private.pem /root/enc.key
  pbsdirect key import-with-master-key rsa-encrypted.key.blob master-private.pem recovered.key`,
		build:    cmdKeyImportWithMasterKey,
		complete: completeEncryptedKey,
	}
}
