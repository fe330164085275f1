package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	flag "github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// storeFlags are the flags shared by every command that reads or writes a
// store: they mean the same everywhere.
type storeFlags struct {
	store        string
	ns           string
	keyfile      string
	outputFormat string
	s3Endpoint   string
	s3Region     string
	s3PathStyle  string
	s3Print      string
	bucketLayout string
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.store, "store", os.Getenv("PBSDIRECT_STORE"), "datastore: a directory, s3://bucket/prefix or gs://bucket/prefix (env PBSDIRECT_STORE)")
	fs.StringVar(&s.ns, "ns", "", "namespace, e.g. prod/db (default: root namespace)")
	fs.StringVar(&s.keyfile, "keyfile", "", "encryption key file (proxmox-backup-client key create); passphrase from PBS_ENCRYPTION_PASSWORD or a prompt")
	fs.StringVar(&s.outputFormat, "output-format", "text", "output format: text or json")
	fs.StringVar(&s.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:7070 or https://<account>.r2.cloudflarestorage.com (default: AWS, or AWS_ENDPOINT_URL_S3)")
	fs.StringVar(&s.s3Region, "s3-region", "", "S3 region (default: AWS_REGION / profile, else us-east-1)")
	fs.StringVar(&s.s3PathStyle, "s3-path-style", "auto", "S3 addressing: auto (path style for IP-address and localhost endpoints, and for a host-name endpoint whose virtual-host name does not resolve), true (path style; also bare --s3-path-style) or false (virtual-hosted)")
	fs.StringVar(&s.s3Print, "s3-fingerprint", "", "pin the S3 endpoint's TLS certificate by its SHA-256 fingerprint (aa:bb:…, as in PBS's S3 endpoint config; self-signed and CN-only certificates included)")
	fs.Lookup("s3-path-style").NoOptDefVal = "true"
	fs.StringVar(&s.bucketLayout, "bucket-layout", "auto", "bucket layout: auto (detect; new prefixes get pbs4-s3), pbs4-s3 (<prefix>/.cnt/…) or plain (copy of a datastore directory)")
}

// pathStyle parses --s3-path-style.
func (s *storeFlags) pathStyle() (s3store.PathStyle, error) {
	ps, err := s3store.ParsePathStyle(s.s3PathStyle)
	if err != nil {
		return ps, usagef("--s3-path-style: %v", err)
	}
	return ps, nil
}

func (s *storeFlags) check() error {
	if s.store == "" {
		return usagef("--store is required (a datastore directory, s3://bucket/prefix or gs://bucket/prefix)")
	}
	if s.outputFormat != "text" && s.outputFormat != "json" {
		return usagef("--output-format must be text or json, not %q", s.outputFormat)
	}
	return nil
}

func (s *storeFlags) json() bool { return s.outputFormat == "json" }

func (s *storeFlags) namespace() (index.Namespace, error) {
	ns, err := index.ParseNamespace(s.ns)
	if err != nil {
		return nil, usagef("--ns: %v", err)
	}
	return ns, nil
}

// loadKey opens the key file given with --keyfile or, like
// proxmox-backup-client, the default key file when it exists (said on
// stderr); without either it returns nil.
func (s *storeFlags) loadKey(ctx context.Context, stderr io.Writer) (*crypto.Config, error) {
	path := s.keyfile
	if path == "" {
		def := defaultKeyPath()
		if _, err := os.Stat(def); err != nil {
			return nil, nil
		}
		fmt.Fprintf(stderr, "pbsdirect: using the default key file %s (give --keyfile to choose another)\n", def)
		path = def
	}
	return openKeyFile(ctx, path, stderr)
}

// openKeyFile reads and decrypts a key file (a regular file of a few KiB,
// see crypto.ReadSecretFile), asking for the passphrase when it is
// protected and PBS_ENCRYPTION_PASSWORD is unset. The key derivation stops
// when ctx ends (Ctrl-C).
func openKeyFile(ctx context.Context, path string, stderr io.Writer) (*crypto.Config, error) {
	data, err := crypto.ReadSecretFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	kf, err := crypto.ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	var pass []byte
	if kf.NeedsPassphrase() {
		pass, err = passphrase("Encryption Key Password: ", false, stderr)
		if err != nil {
			return nil, fmt.Errorf("key file %s: %w", path, err)
		}
	}
	_, cfg, err := kf.Open(ctx, pass)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return cfg, nil
}

// passphrase returns PBS_ENCRYPTION_PASSWORD, the first line of the file
// named by PBS_ENCRYPTION_PASSWORD_FILE, or reads one from the terminal
// (twice when confirm is set). Without a terminal it fails.
func passphrase(prompt string, confirm bool, stderr io.Writer) ([]byte, error) {
	if p, ok := os.LookupEnv("PBS_ENCRYPTION_PASSWORD"); ok {
		return []byte(p), nil
	}
	if f := os.Getenv("PBS_ENCRYPTION_PASSWORD_FILE"); f != "" {
		data, err := crypto.ReadSecretFile(f)
		if err != nil {
			return nil, fmt.Errorf("PBS_ENCRYPTION_PASSWORD_FILE: %w", err)
		}
		line, _, _ := strings.Cut(string(data), "\n")
		return []byte(strings.TrimRight(line, "\r")), nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		if tty != nil {
			tty.Close()
		}
		return nil, crypto.ErrPassphraseNeeded
	}
	defer tty.Close()
	read := func(p string) ([]byte, error) {
		fmt.Fprint(tty, p)
		b, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		return b, err
	}
	p1, err := read(prompt)
	if err != nil {
		return nil, err
	}
	if confirm {
		p2, err := read("Verify Password: ")
		if err != nil {
			return nil, err
		}
		if string(p1) != string(p2) {
			return nil, errors.New("passphrases do not match")
		}
	}
	return p1, nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
