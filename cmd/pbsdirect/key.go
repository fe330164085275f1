package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/keys"
)

func runtimeCPUs() int { return runtime.GOMAXPROCS(0) }

// defaultKeyPath is where proxmox-backup-client keeps its default key
// (keys.DefaultPath).
func defaultKeyPath() string { return keys.DefaultPath() }

func cmdKeyCreate(fs *flag.FlagSet) commandFunc {
	kdf := fs.String("kdf", crypto.KDFScrypt, "key derivation: scrypt, pbkdf2 or none (none stores the key unprotected)")
	hint := fs.String("hint", "", "password hint stored in the key file")
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() > 1 {
			return usagef("want at most one PATH")
		}
		if err := keys.CheckKDF(*kdf); err != nil {
			return err
		}
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		path := keyPathArg(fs.Args(), 0)
		if _, err := os.Stat(path); err == nil {
			return usagef("key file %s already exists: refusing to overwrite", path)
		}
		var pass []byte
		if *kdf != crypto.KDFNone {
			var err error
			pass, err = passphrase("Encryption Key Password: ", true, stderr)
			if errors.Is(err, crypto.ErrPassphraseNeeded) {
				return usagef("a passphrase is needed for --kdf %s and there is no terminal to ask on: set PBS_ENCRYPTION_PASSWORD or PBS_ENCRYPTION_PASSWORD_FILE, or use --kdf none", *kdf)
			}
			if err != nil {
				return err
			}
		}
		kf, err := keys.Create(path, *kdf, pass, *hint)
		if err != nil {
			return err
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, map[string]string{"path": path, "kdf": *kdf, "fingerprint": kf.Fingerprint})
		}
		fmt.Fprintf(stdout, "created key file %s (kdf %s), fingerprint %s\n", path, *kdf, kf.Fingerprint)
		return nil
	}
}

func cmdKeyShow(fs *flag.FlagSet) commandFunc {
	verify := fs.Bool("verify", false, "decrypt the key (passphrase needed) and check the stored fingerprint")
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() > 1 {
			return usagef("want at most one PATH")
		}
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		path := keyPathArg(fs.Args(), 0)
		kf, err := keys.Load(path)
		if err != nil {
			return err
		}
		info := keys.Describe(path, kf)
		if *verify || kf.Fingerprint == "" || !kf.NeedsPassphrase() {
			var pass []byte
			if kf.NeedsPassphrase() {
				if pass, err = passphrase("Encryption Key Password: ", false, stderr); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			_, cfg, err := kf.Open(ctx, pass)
			if err != nil {
				return keys.NotOpened(path, err) // a wrong passphrase: exit 3
			}
			info.Fingerprint = cfg.Fingerprint().String()
			info.Verified = true
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, info)
		}
		fmt.Fprintf(stdout, "path:        %s\nkdf:         %s\ncreated:     %s\nmodified:    %s\nfingerprint: %s\n", info.Path, info.KDF, info.Created, info.Modified, info.Fingerprint)
		if info.Hint != "" {
			fmt.Fprintf(stdout, "hint:        %s\n", info.Hint)
		}
		if info.Verified {
			fmt.Fprintln(stdout, "verified:    key decrypted, fingerprint recomputed")
		}
		return nil
	}
}

// keyCommand is 'pbsdirect key'.
func keyCommand() commandSpec {
	return commandSpec{
		use:   "key COMMAND",
		short: "create, show and manage key files (as proxmox-backup-client key)",
		long: `Create, show and manage key files as proxmox-backup-client key does. PATH
defaults to the default key file, ~/.config/proxmox-backup/encryption-key.json
($XDG_CONFIG_HOME/proxmox-backup/encryption-key.json), which restore, verify
and backup read when a snapshot is encrypted and no --keyfile is given. A
paper key (the text of 'key paperkey') is accepted wherever a key file is.`,
		example: `  pbsdirect key create /root/enc.key
  pbsdirect key show --verify /root/enc.key`,
		sub: []commandSpec{keyCreateCommand(), keyShowCommand(), keyChangePassphraseCommand(), keyPaperkeyCommand(), keyCreateMasterKeyCommand(), keyImportWithMasterKeyCommand()},
	}
}

// keyCreateCommand is 'pbsdirect key create'.
func keyCreateCommand() commandSpec {
	return commandSpec{
		use:   "create [flags] [PATH]",
		short: "create a key file",
		long: `Create a key file (AES-256 key, as proxmox-backup-client key create) at PATH,
default the default key file. The passphrase is asked twice on a terminal, or
taken from PBS_ENCRYPTION_PASSWORD / _FILE / _FD; --kdf none stores it
unprotected. An existing file is never overwritten.`,
		example: `  pbsdirect key create /root/enc.key
  PBS_ENCRYPTION_PASSWORD_FILE=/root/pass pbsdirect key create --kdf pbkdf2 enc.key`,
		build: cmdKeyCreate,
	}
}

// keyShowCommand is 'pbsdirect key show'.
func keyShowCommand() commandSpec {
	return commandSpec{
		use:   "show [flags] [PATH]",
		short: "show a key file's fingerprint and KDF",
		long: `Show a key file's fingerprint, KDF and dates (--verify: decrypt it and check
the stored fingerprint).`,
		example: `  pbsdirect key show --verify /root/enc.key`,
		build:   cmdKeyShow,
	}
}
