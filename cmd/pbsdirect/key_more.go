package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/keys"
)

// Names of the master key files key create-master-key writes in the current
// directory, as proxmox-backup-client (§5.5).
const (
	masterPublicName  = keys.MasterPublicName
	masterPrivateName = keys.MasterPrivateName
)

// keyPathArg returns the key file PATH argument at position i of args, or
// the default key file when it is not given.
func keyPathArg(args []string, i int) string {
	if len(args) > i {
		return args[i]
	}
	return defaultKeyPath()
}

// newPassphrase returns the new passphrase for a key: the first line of
// file when given, else asked twice on the terminal (prompt). Without
// either it is a usage error naming flagName and the alternative (or "").
func newPassphrase(flagName, file, prompt, alternative string) ([]byte, error) {
	if file != "" {
		return keys.SecretFromFile(flagName, file)
	}
	p, err := askPassphrase(prompt, true)
	if errors.Is(err, crypto.ErrPassphraseNeeded) {
		return nil, usagef("no terminal to ask for the new passphrase: give %s%s", flagName, alternative)
	}
	return p, err
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
		if err := keys.CheckKDF(*kdf); err != nil {
			return err
		}
		path := keyPathArg(fs.Args(), 0)
		kf, err := keys.Load(path)
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
			return keys.NotOpened(path, err) // a wrong passphrase: exit 3
		}
		var pass []byte
		if *kdf != crypto.KDFNone {
			if pass, err = newPassphrase("--new-passphrase-file", *newFile, "New Password: ", ", or --kdf none"); err != nil {
				return err
			}
		}
		out, _, err := keys.Seal(key, *kdf, pass, kf.Created, *hint)
		if err != nil {
			return err
		}
		if err := keys.Write(path, out, true); err != nil {
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
		data, err := keys.ReadFile(path)
		if err != nil {
			return err
		}
		text, err := keys.PaperText(path, data, *subject)
		if err != nil {
			return err
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
		if err := keys.WriteMasterKey(*bits, pass); err != nil {
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
		if err := keys.CheckKDF(*kdf); err != nil {
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
			ct, err = keys.ReadRSAKeyFile(fs.Arg(0))
			if errors.Is(err, os.ErrNotExist) && checkSnapshotRef(fs.Arg(0)) == nil {
				return usagef("ENCRYPTED-KEY %s: no such file; to read it from that snapshot, give --store (and --ns)", fs.Arg(0))
			}
		}
		if err != nil {
			return err
		}
		priv, err := keys.OpenMaster(fs.Arg(1), func() ([]byte, error) {
			if *passFile != "" {
				return keys.SecretFromFile("--master-passphrase-file", *passFile)
			}
			p, err := askPassphrase("Master Key Password: ", false)
			if errors.Is(err, crypto.ErrPassphraseNeeded) {
				err = usagef("%s is passphrase-protected and there is no terminal to ask on: give --master-passphrase-file", fs.Arg(1))
			}
			return p, err
		})
		if err != nil {
			return err
		}
		rec, err := keys.Recover(ctx, fs.Arg(0), fs.Arg(1), priv, ct, wantFP)
		if err != nil {
			return err
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
		out, _, err := keys.Seal(rec.Key, *kdf, pass, rec.Created, *hint)
		if err != nil {
			return err
		}
		if err := keys.Write(path, out, false); err != nil {
			return err
		}
		return printKeyResult(stdout, "imported the key into", path, *kdf, rec.Config.Fingerprint())
	}
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
	return keys.RSAKeyBlob(ctx, store, ns, ref, func(msg string) { fmt.Fprintf(stderr, "pbsdirect: %s\n", msg) })
}

// rsaEncryptedKey encrypts the key cc (opened from keyfile, or the default
// key file when keyfile is "") under the master public key in pubFile
// (keys.RSAEncryptUnder).
func rsaEncryptedKey(pubFile, keyfile string, cc *crypto.Config) ([]byte, error) {
	if keyfile == "" {
		keyfile = defaultKeyPath()
	}
	return keys.RSAEncryptUnder(pubFile, keyfile, cc)
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
path of an rsa-encrypted.key.blob file; MASTER-KEY is master-private.pem, or
its paper key (key paperkey: the printout with its QR codes, or its numbered
lines typed back), its passphrase from --master-passphrase-file or the
terminal. The recovered key is
written to PATH (default: the default key file) under a new passphrase, from
PBS_ENCRYPTION_PASSWORD, _FILE or _FD, or asked twice on the terminal (--kdf
none: unprotected).`,
		example: `  pbsdirect key import-with-master-key --store /mnt/ds vm/100/2026-11-29T10:00:00Z master-private.pem /root/enc.key
  pbsdirect key import-with-master-key rsa-encrypted.key.blob master-private.pem recovered.key`,
		build:    cmdKeyImportWithMasterKey,
		complete: completeEncryptedKey,
	}
}
