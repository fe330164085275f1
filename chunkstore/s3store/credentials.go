package s3store

import (
	"fmt"
	"os"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// envPrefixRE is what an environment variable prefix may be (EnvPrefix):
// a shell variable name.
var envPrefixRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvPrefix reports whether p can prefix environment variable names
// (Options.EnvPrefix): nil, or an error saying what a prefix is.
func CheckEnvPrefix(p string) error {
	if !envPrefixRE.MatchString(p) {
		return fmt.Errorf("invalid environment variable prefix %q (want letters, digits and '_', e.g. R2 for R2_ACCESS_KEY_ID)", p)
	}
	return nil
}

// credentialOptions returns the configuration options that select the
// credentials source of opts: Credentials, else EnvPrefix, and Profile
// and CredentialsFile. A prefix whose variables are not set is an error
// wrapping chunkstore.ErrDenied that names the variables, never their
// values; a credentials file that cannot be read one that names the file
// (the SDK would only say that the profile is missing).
func credentialOptions(opts Options) ([]func(*config.LoadOptions) error, error) {
	var lo []func(*config.LoadOptions) error
	if opts.CredentialsFile != "" && opts.Credentials == nil && opts.EnvPrefix == "" {
		f, err := os.Open(opts.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("%w: credentials file %s cannot be read: %w", chunkstore.ErrDenied, opts.CredentialsFile, err)
		}
		f.Close()
	}
	if opts.Profile != "" || opts.CredentialsFile != "" {
		profile := opts.Profile
		if profile == "" {
			profile = "default"
		}
		lo = append(lo, config.WithSharedConfigProfile(profile))
	}
	if opts.CredentialsFile != "" {
		lo = append(lo, config.WithSharedCredentialsFiles([]string{opts.CredentialsFile}))
	}
	switch {
	case opts.Credentials != nil:
		lo = append(lo, config.WithCredentialsProvider(opts.Credentials))
	case opts.EnvPrefix != "":
		if err := CheckEnvPrefix(opts.EnvPrefix); err != nil {
			return nil, err
		}
		id, secret := opts.EnvPrefix+"_ACCESS_KEY_ID", opts.EnvPrefix+"_SECRET_ACCESS_KEY"
		if os.Getenv(id) == "" || os.Getenv(secret) == "" {
			return nil, fmt.Errorf("%w: no credentials in the environment: %s and %s must both be set", chunkstore.ErrDenied, id, secret)
		}
		p := credentials.NewStaticCredentialsProvider(os.Getenv(id), os.Getenv(secret), os.Getenv(opts.EnvPrefix+"_SESSION_TOKEN"))
		lo = append(lo, config.WithCredentialsProvider(p))
	}
	return lo, nil
}
