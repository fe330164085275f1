package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/keys"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// storeFlags are the flags shared by every command that reads or writes a
// store: they mean the same everywhere.
type storeFlags struct {
	store        string   // the first --store (set by check)
	stores       []string // every --store, in order of preference
	skipped      []string // warnings for stores of a chain left out when opened
	leftOut      []string // the --store values of a chain left out when opened
	remote       bool     // some --store is a bucket (set by check)
	ns           string
	keyfile      string   // the first --keyfile
	keyfiles     []string // every --keyfile, in order
	outputFormat string
	s3Endpoint   string
	s3Region     string
	s3PathStyle  string
	s3Print      string
	bucketLayout string
	storesConfig string                // --stores-config: the stores file of named stores (@NAME)
	named        *backends.NamedStores // the stores file, once read (expandStore)
	ioTimeout    time.Duration
	retryFor     time.Duration
	progress     progressFlags // registered by the commands that show progress
	rate         rateFlags     // registered by the commands that read chunks
	// retries shows the bucket requests being retried (progress).
	retries bucket.RetryWatch
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	s.registerLocation(fs)
	fs.Var(&keyfilesValue{first: &s.keyfile, all: &s.keyfiles}, "keyfile", "encryption key file or paper key (proxmox-backup-client key create); passphrase from PBS_ENCRYPTION_PASSWORD, PBS_ENCRYPTION_PASSWORD_FILE, PBS_ENCRYPTION_PASSWORD_FD or a prompt naming the file. "+
		"Reading commands take it several times, and a directory of key files: each snapshot is read with the key its manifest names, and only that key file is opened")
	s.registerOutput(fs)
}

// registerOutput adds --output-format.
func (s *storeFlags) registerOutput(fs *flag.FlagSet) {
	registerOutputFormat(fs, &s.outputFormat)
}

// registerLocation adds the flags that name a store and a namespace in it
// (no key, no output format).
func (s *storeFlags) registerLocation(fs *flag.FlagSet) {
	var def []string
	if env := os.Getenv("PBSDIRECT_STORE"); env != "" {
		def = []string{env}
	}
	fs.StringArrayVar(&s.stores, "store", def, "datastore: a directory, s3://bucket/prefix or gs://bucket/prefix (env PBSDIRECT_STORE); a bucket may carry settings of its own as URL parameters, over the --s3-* flags: 's3://bucket/prefix?endpoint=URL&region=R&path-style=true&profile=P' (also fingerprint, credentials-file, env=PREFIX; gs://: endpoint, credentials-file, anonymous; see docs/BUCKETS.md); reading commands take it several times, in order of preference (e.g. the PBS 4 S3 local cache directory, the bucket, a mirror): each chunk comes from the first store with a good copy")
	fs.StringVar(&s.ns, "ns", os.Getenv("PBS_NAMESPACE"), "namespace as pbsdirect namespaces prints it: prod/db (or prod/db/); the datastore path form ns/prod/ns/db only when that is the only reading that exists (env PBS_NAMESPACE; default: the root namespace)")
	manDefault(fs, "store", "[]", "")
	manDefault(fs, "ns", "", "")
	fs.StringVar(&s.storesConfig, "stores-config", os.Getenv("PBSDIRECT_STORES_CONFIG"), "stores file of named stores, which --store @NAME[/PATH] takes (INI: [NAME] with url = s3://… or gs://… and the store's own settings; env PBSDIRECT_STORES_CONFIG; default $XDG_CONFIG_HOME/pbsdirect/stores.conf)")
	manDefault(fs, "stores-config", "", "")
	fs.StringVar(&s.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:7070 or https://<account>.r2.cloudflarestorage.com (default: AWS, or AWS_ENDPOINT_URL_S3)")
	fs.StringVar(&s.s3Region, "s3-region", "", "S3 region (default: AWS_REGION / profile, else us-east-1)")
	fs.StringVar(&s.s3PathStyle, "s3-path-style", "auto", "S3 addressing: auto (path style for IP-address and localhost endpoints, and for a host-name endpoint whose virtual-host name does not resolve), true (path style; also bare --s3-path-style) or false (virtual-hosted)")
	fs.StringVar(&s.s3Print, "s3-fingerprint", "", "pin the S3 endpoint's TLS certificate by its SHA-256 fingerprint (aa:bb:…, as in PBS's S3 endpoint config; self-signed and CN-only certificates included)")
	fs.Lookup("s3-path-style").NoOptDefVal = "true"
	fs.DurationVar(&s.ioTimeout, "io-timeout", bucket.DefaultIOTimeout, "bucket requests: cut and retry a transfer that moved no byte for this long (the wait for the first byte included); a transfer that keeps moving is never cut")
	fs.DurationVar(&s.retryFor, "retry-for", bucket.DefaultRetryFor, "bucket requests: keep retrying the same failing or throttled request for this long (Retry-After honoured, fewer GETs in flight while throttled), then give up with exit code 3")
	fs.StringVar(&s.bucketLayout, "bucket-layout", "auto", "bucket layout: auto (detect; new prefixes get pbs4-s3), pbs4-s3 (<prefix>/.cnt/…) or plain (copy of a datastore directory)")
}

// fetchSpec returns the store spec that sizes the pipeline: a bucket among
// the stores if there is one (it needs reads in flight), else the first.
func (s *storeFlags) fetchSpec() string {
	for _, st := range s.stores {
		if isRemote(st) {
			return st
		}
	}
	return s.store
}

func (s *storeFlags) check() error {
	if len(s.stores) == 0 || s.stores[0] == "" {
		return usagef("--store is required (a datastore directory, s3://bucket/prefix or gs://bucket/prefix)")
	}
	for i, st := range s.stores {
		st, err := s.expandStore("--store", st)
		if err != nil {
			return err
		}
		s.stores[i] = st
		if err := checkStoreSpec(st); err != nil {
			return err
		}
		if isRemote(st) {
			s.remote = true
		}
	}
	s.store = s.stores[0]
	if s.ioTimeout <= 0 {
		return usagef("--io-timeout must be positive, not %v", s.ioTimeout)
	}
	if s.retryFor < 0 {
		return usagef("--retry-for must not be negative, not %v", s.retryFor)
	}
	if err := s.rate.check(); err != nil {
		return err
	}
	s.progress.limit = s.rate.limiter
	if s.progress.Mode != "" {
		if err := s.progress.Check(); err != nil {
			return err
		}
	}
	return checkOutputFormat(s.outputFormat)
}

// checkStoreSpec refuses a --store that is a malformed bucket URL (usage
// error, backends.CheckSpec).
func checkStoreSpec(spec string) error { return checkStoreSpecFlag("--store", spec) }

// checkStoreSpecFlag is checkStoreSpec for a store given with flag (e.g.
// "--from"), its usage error naming that flag.
func checkStoreSpecFlag(flag, spec string) error {
	if err := backends.CheckSpecFlag(flag, spec); err != nil {
		return usageOf(err)
	}
	return nil
}

func (s *storeFlags) json() bool { return s.outputFormat != formatText }

// nsArg parses --ns: its readings, settled against the store by
// nsArg.resolve once the store is open. It returns a usage error when no
// reading is a namespace.
func (s *storeFlags) nsArg() (nsArg, error) { return parseNSArg(s.ns) }

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
// protected and PBS_ENCRYPTION_PASSWORD is unset (the prompt names the
// file). The key derivation stops when ctx ends (Ctrl-C).
func openKeyFile(ctx context.Context, path string, stderr io.Writer) (*crypto.Config, error) {
	return keys.Open(ctx, path, func() ([]byte, error) {
		return passphrase(fmt.Sprintf("Encryption Key Password (%s): ", index.DisplayText(path)), false, stderr)
	})
}

// passphrase returns the key passphrase from, in this order (as
// proxmox-backup-client): PBS_ENCRYPTION_PASSWORD, the first line read from
// the file descriptor PBS_ENCRYPTION_PASSWORD_FD, the first line of the file
// PBS_ENCRYPTION_PASSWORD_FILE, the terminal (asked twice when confirm is
// set), or the systemd credential
// $CREDENTIALS_DIRECTORY/proxmox-backup-client.encryption-password. With
// none of them it returns crypto.ErrPassphraseNeeded.
func passphrase(prompt string, confirm bool, stderr io.Writer) ([]byte, error) {
	if p, ok, err := keys.EnvPassphrase(); ok {
		return p, err
	}
	p, err := askPassphrase(prompt, confirm)
	if errors.Is(err, crypto.ErrPassphraseNeeded) {
		if c, ok, cerr := keys.CredentialPassphrase(); ok {
			return c, cerr
		}
	}
	return p, err
}

// askPassphrase reads a passphrase from the terminal (twice when confirm is
// set, cli.ReadSecret); without a terminal it returns
// crypto.ErrPassphraseNeeded.
func askPassphrase(prompt string, confirm bool) ([]byte, error) {
	p, err := cli.ReadSecret(prompt, confirm)
	if errors.Is(err, cli.ErrNoTerminal) {
		return nil, crypto.ErrPassphraseNeeded
	}
	return p, err
}
