package backends

import (
	"fmt"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

// Settings are the settings of opening a store as a command line gives
// them, not parsed yet: the bucket layout, the S3 settings and the bucket
// request policy. Options parses them.
type Settings struct {
	Layout        string        // --bucket-layout: auto, pbs4-s3 or plain
	S3Endpoint    string        // --s3-endpoint
	S3Region      string        // --s3-region
	S3PathStyle   string        // --s3-path-style: auto, true or false
	S3Fingerprint string        // --s3-fingerprint: the endpoint certificate's SHA-256
	IOTimeout     time.Duration // --io-timeout
	RetryFor      time.Duration // --retry-for; 0: no retries
	HTTP          string        // --bucket-http: auto, 1.1 or 2
	// Watch, when set, is told of the bucket requests being retried.
	Watch *bucket.RetryWatch
	// Limit, when set, caps the bytes read and the requests made
	// (--rate, --burst, --rate-requests; Options.Limit).
	Limit *ratelimit.Limiter
}

// SettingError is a setting that does not parse; Setting names it as the
// command line does ("--bucket-layout").
type SettingError struct {
	Setting string
	Err     error
}

// Error returns "SETTING: why".
func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }

// Unwrap returns why.
func (e *SettingError) Unwrap() error { return e.Err }

// S3Options returns the S3 settings parsed (endpoint, region, path style);
// a path style that does not parse is a *SettingError.
func (s Settings) S3Options() (s3store.Options, error) {
	ps, err := s3store.ParsePathStyle(s.S3PathStyle)
	if err != nil {
		return s3store.Options{}, &SettingError{"--s3-path-style", err}
	}
	return s3store.Options{Endpoint: s.S3Endpoint, Region: s.S3Region, PathStyle: ps}, nil
}

// Options returns the Options for opening a store with s: create prepares
// a new datastore (a backup); concurrency is the number of requests kept
// in flight, which sizes bucket connection pools. A setting that does not
// parse is a *SettingError.
func (s Settings) Options(create bool, concurrency int) (Options, error) {
	layout, err := ParseLayout(s.Layout)
	if err != nil {
		return Options{}, &SettingError{"--bucket-layout", err}
	}
	s3, err := s.S3Options()
	if err != nil {
		return Options{}, err
	}
	if s.S3Fingerprint != "" {
		if _, err := s3store.ParseFingerprint(s.S3Fingerprint); err != nil {
			return Options{}, &SettingError{"--s3-fingerprint", err}
		}
	}
	s3.Fingerprint = s.S3Fingerprint
	httpVersion, err := bucket.ParseHTTPVersion(s.HTTP)
	if err != nil {
		return Options{}, &SettingError{"--bucket-http", err}
	}
	opts := Options{
		Create:      create,
		Concurrency: concurrency,
		Layout:      layout,
		S3:          s3,
		Policy:      bucket.Options{IOTimeout: s.IOTimeout, RetryFor: s.RetryFor, Watch: s.Watch, HTTP: httpVersion},
		Limit:       s.Limit,
	}
	if s.RetryFor == 0 {
		opts.Policy.RetryFor = -1 // no retries
	}
	return opts, nil
}

// CheckPathStyle reports whether v is a --s3-path-style value (auto, true,
// false or any spelling s3store.ParsePathStyle accepts): nil, or the
// parser's error.
func CheckPathStyle(v string) error {
	_, err := s3store.ParsePathStyle(v)
	return err
}

// CheckSpec refuses a store specification that is a malformed bucket URL:
// "s3://" without a bucket, or "s3:/bucket", "S3://bucket", "gs:bucket",
// which would otherwise be taken for a directory, or a bucket whose query
// parameters (its own settings, StoreOptions) are unknown to its backend,
// given twice or do not parse (a *ParamError). Its errors name the
// specification as --store gives it (credentials hidden, DisplaySpec) and
// say how a bucket is written.
func CheckSpec(spec string) error { return CheckSpecFlag("--store", spec) }

// CheckSpecFlag is CheckSpec for a store given with the flag named flag
// (e.g. "--from"): its errors name that flag.
func CheckSpecFlag(flag, spec string) error {
	scheme, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return nil
	}
	_, known := schemeOf(strings.ToLower(scheme) + "://")
	if known && scheme == strings.ToLower(scheme) {
		if !strings.HasPrefix(rest, "//") {
			return fmt.Errorf("%s %q: a bucket is written %s://bucket/prefix", flag, spec, scheme)
		}
		b, _ := schemeOf(spec)
		if _, _, _, ok := bucketUserinfo(BaseSpec(spec)); ok {
			return fmt.Errorf("%s %s: %w", flag, DisplaySpec(spec), errBucketUserinfo)
		}
		if _, _, err := bucket.ParseURL(scheme, BaseSpec(spec)); err != nil {
			return fmt.Errorf("%s: %v", flag, err)
		}
		if err := checkParams(b, spec); err != nil {
			return fmt.Errorf("%s %w", flag, err)
		}
		return nil
	}
	if known && !strings.Contains(scheme, "/") {
		return fmt.Errorf("%s %q: a bucket is written %s://bucket/prefix (lower case)", flag, spec, strings.ToLower(scheme))
	}
	return nil
}
