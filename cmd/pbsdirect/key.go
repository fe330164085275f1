package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/crypto"
)

func runtimeCPUs() int { return runtime.GOMAXPROCS(0) }

// defaultKeyPath is where proxmox-backup-client keeps its default key.
func defaultKeyPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "encryption-key.json"
	}
	return filepath.Join(dir, "proxmox-backup", "encryption-key.json")
}

func cmdKeyCreate(fs *flag.FlagSet) commandFunc {
	kdf := fs.String("kdf", crypto.KDFScrypt, "key derivation: scrypt, pbkdf2 or none (none stores the key unprotected)")
	hint := fs.String("hint", "", "password hint stored in the key file")
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() > 1 {
			return usagef("want at most one PATH")
		}
		if err := parseKDF(*kdf); err != nil {
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
		key, err := crypto.GenerateKey()
		if err != nil {
			return err
		}
		kf, err := crypto.NewKeyFile(key, *kdf, pass, time.Now())
		if err != nil {
			return err
		}
		kf.Hint = *hint
		data, err := kf.Marshal()
		if err != nil {
			return err
		}
		if err := writeKeyFile(path, data, false); err != nil {
			return err
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, map[string]string{"path": path, "kdf": *kdf, "fingerprint": kf.Fingerprint})
		}
		fmt.Fprintf(stdout, "created key file %s (kdf %s), fingerprint %s\n", path, *kdf, kf.Fingerprint)
		return nil
	}
}

// keyInfo is what 'key show' prints.
type keyInfo struct {
	Path        string `json:"path"`
	KDF         string `json:"kdf"`
	Created     string `json:"created"`
	Modified    string `json:"modified"`
	Fingerprint string `json:"fingerprint"`
	Hint        string `json:"hint,omitempty"`
	Verified    bool   `json:"verified"` // the key was decrypted and its fingerprint recomputed
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
		kf, err := readKeyFile(path)
		if err != nil {
			return err
		}
		info := keyInfo{Path: path, KDF: crypto.KDFNone, Created: kf.Created, Modified: kf.Modified, Fingerprint: kf.Fingerprint, Hint: kf.Hint}
		switch {
		case kf.KDF != nil && kf.KDF.Scrypt != nil:
			info.KDF = crypto.KDFScrypt
		case kf.KDF != nil:
			info.KDF = crypto.KDFPBKDF2
		}
		if *verify || kf.Fingerprint == "" || !kf.NeedsPassphrase() {
			var pass []byte
			if kf.NeedsPassphrase() {
				if pass, err = passphrase("Encryption Key Password: ", false, stderr); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			_, cfg, err := kf.Open(ctx, pass)
			if err != nil {
				if errors.Is(err, crypto.ErrKeyFingerprint) || errors.Is(err, crypto.ErrWrongPassphrase) {
					return fmt.Errorf("%s: %w", path, err)
				}
				return fmt.Errorf("%s: %w", path, err)
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
