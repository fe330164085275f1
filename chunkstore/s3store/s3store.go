// Package s3store is the chunkstore.Store backend for S3-compatible object
// storage (AWS S3, MinIO, Ceph RGW, Cloudflare R2, the GCS XML interop
// endpoint, versitygw), built on the AWS SDK for Go v2.
//
// A store is a bucket prefix in one of two layouts (see Layout): the PBS 4
// S3 datastore layout (FORMAT.md §8.1) or a plain copy of a datastore
// directory (§1). Open detects which one.
//
// Requests follow the bucket request policy (bucket.Policy): the SDK makes
// one attempt, and the policy retries transient failures (HTTP 5xx except
// 501, 409, connection resets, also while reading a response body, and
// transfers stalled for the I/O timeout) with exponential backoff and
// jitter, and throttling (429, 503 SlowDown) after its Retry-After while
// lowering the chunk GETs in flight, until the same request has failed for
// the retry window; 404 is reported as chunkstore.ErrNotFound and 403 as
// chunkstore.ErrDenied, both without retrying.
package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// Layout is how the datastore is laid out below the bucket prefix.
type Layout = bucket.Layout

// Layouts (see bucket.Layout).
const (
	LayoutAuto  = bucket.LayoutAuto
	LayoutPBS4  = bucket.LayoutPBS4
	LayoutPlain = bucket.LayoutPlain
)

// PathStyle selects path-style ("https://host/bucket/key") or virtual-hosted
// ("https://bucket.host/key") addressing.
type PathStyle int

const (
	// PathStyleAuto uses path style for endpoints whose host is an IP
	// address or localhost, virtual-hosted style otherwise.
	PathStyleAuto PathStyle = iota
	// PathStyleOn always uses path-style addressing.
	PathStyleOn
	// PathStyleOff always uses virtual-hosted addressing.
	PathStyleOff
)

// String returns "auto", "true" or "false".
func (p PathStyle) String() string {
	switch p {
	case PathStyleOn:
		return "true"
	case PathStyleOff:
		return "false"
	}
	return "auto"
}

// ParsePathStyle parses the --s3-path-style flag value: "auto" (or ""),
// "true"/"on"/"yes"/"1" or "false"/"off"/"no"/"0".
func ParsePathStyle(s string) (PathStyle, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return PathStyleAuto, nil
	case "true", "on", "yes", "1":
		return PathStyleOn, nil
	case "false", "off", "no", "0":
		return PathStyleOff, nil
	}
	return PathStyleAuto, fmt.Errorf("invalid S3 path style %q (want auto, true or false)", s)
}

// Defaults used for zero Options fields.
const (
	DefaultConcurrency = bucket.DefaultConcurrency
	// DefaultRegion is the SigV4 region used when neither Options.Region nor
	// the AWS configuration (AWS_REGION, profile) names one.
	DefaultRegion = "us-east-1"
)

// Options configures Open. The zero value uses the AWS SDK's standard
// configuration chain for everything (credentials, region, endpoint) and the
// defaults above.
type Options struct {
	// Endpoint is the S3 API base URL (--s3-endpoint), e.g.
	// "https://minio.example:9000" ("https://" is assumed without a scheme).
	// Empty: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the profile's
	// endpoint_url, else AWS S3.
	Endpoint string
	// Region is the SigV4 signing region (--s3-region), e.g. "eu-central-1"
	// or "auto" for Cloudflare R2. Empty: AWS_REGION / the profile, else
	// DefaultRegion.
	Region string
	// PathStyle selects the addressing style (--s3-path-style).
	PathStyle PathStyle
	// Concurrency is the number of requests the caller intends to have in
	// flight; the HTTP connection pool keeps at least that many idle
	// connections per host. 0 means DefaultConcurrency.
	Concurrency int
	// Policy is the request policy (--io-timeout, --retry-for, backoff);
	// its Concurrency, when 0, is Concurrency.
	Policy bucket.Options
	// Layout forces a layout; LayoutAuto detects it (see Open).
	Layout Layout
	// Create opens the store for writing (backup): an empty prefix gets the
	// PBS 4 layout unless Layout says otherwise.
	Create bool
	// Credentials overrides the SDK's credential chain when non-nil (e.g.
	// credentials.NewStaticCredentialsProvider in tests).
	Credentials aws.CredentialsProvider
	// Profile names the shared configuration profile to load (credentials,
	// and region and endpoint_url when the profile has them), in place of
	// AWS_PROFILE; it wins over AWS_ACCESS_KEY_ID and its kin. Empty: the
	// SDK's chain.
	Profile string
	// CredentialsFile is the shared credentials file (INI, as
	// ~/.aws/credentials) to read in place of AWS_SHARED_CREDENTIALS_FILE;
	// its profile Profile, else "default", is used (winning over
	// AWS_ACCESS_KEY_ID and its kin).
	CredentialsFile string
	// EnvPrefix, when set, takes the credentials from the environment
	// variables PREFIX_ACCESS_KEY_ID, PREFIX_SECRET_ACCESS_KEY and
	// (optional) PREFIX_SESSION_TOKEN, as AWS_ACCESS_KEY_ID and its kin
	// would be; both keys must be set. Credentials wins over it.
	EnvPrefix string
	// PerStore says that the store was given settings of its own, as
	// query parameters of its specification ("s3://b/p?region=…"): the
	// hints of errors name those parameters next to the flags.
	PerStore bool
	// Label, when set, follows the store's URL in String(), in
	// parentheses ("s3://b/p (host:9000)"): the endpoint of a store given
	// one of its own, so that stores of the same bucket and prefix at
	// other endpoints are told apart in reports. Messages of the store's
	// own errors keep the bare URL.
	Label string
	// Fingerprint pins the endpoint's TLS certificate (--s3-fingerprint), as
	// PBS's S3 endpoint "fingerprint" does: the SHA-256 of the server's leaf
	// certificate (DER), 64 hex digits with or without ':' separators. When
	// set, that certificate is accepted whatever its issuer and names (a
	// self-signed certificate with its name only in the subject CN included)
	// and every other certificate is refused. Empty: the usual verification
	// (system roots, AWS_CA_BUNDLE).
	Fingerprint string
	// DialContext, when non-nil, makes the store's connections instead of
	// net.Dialer (host name resolution included); for tests that need a
	// name resolver of their own.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// ListPageSize is the number of keys asked for per listing page
	// (MaxKeys); 0 leaves it to the server (1000 on AWS S3).
	ListPageSize int
}

// ParseFingerprint parses a certificate fingerprint as PBS writes it
// ("aa:bb:…", 32 bytes as hex with ':' separators) or as bare hex, any case.
func ParseFingerprint(s string) ([sha256.Size]byte, error) {
	var fp [sha256.Size]byte
	h := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return fp, fmt.Errorf("invalid certificate fingerprint %q: want the SHA-256 of the certificate, 32 bytes in hex (e.g. as 'openssl x509 -noout -fingerprint -sha256' prints it)", s)
	}
	copy(fp[:], b)
	return fp, nil
}

// Store is a datastore in an S3 bucket. It implements chunkstore.Store and
// is safe for concurrent use.
type Store struct {
	client   *s3.Client
	conns    connSet
	bucket   string
	keys     bucket.Keys
	url      string
	endpoint string
	pol      *bucket.Policy
	// noCondPut is set once the server answered a conditional PUT with
	// "not implemented": WriteChunk then uses HEAD + PUT.
	noCondPut atomic.Bool
	// region is the signing region in use; pathStyle the addressing.
	region    string
	pathStyle bool
	// perStore is Options.PerStore.
	perStore bool
	// label is Options.Label.
	label string
	// followed names what Open corrected on its own ("" if nothing): the
	// bucket's region, path-style addressing.
	followed []string
	// pageSize is Options.ListPageSize (0: the server's default).
	pageSize int32
	// Warnings say what a listing left out (keys that could not be
	// decoded; WarnTo).
	chunkstore.Warnings
}

var (
	_ chunkstore.WriteStore       = (*Store)(nil)
	_ chunkstore.SnapshotClaimer  = (*Store)(nil)
	_ chunkstore.ChunkStatter     = (*Store)(nil)
	_ chunkstore.ChunkReplacer    = (*Store)(nil)
	_ chunkstore.RedirectFollower = (*Store)(nil)
	_ chunkstore.Warner           = (*Store)(nil)
	_ bucket.LayoutReporter       = (*Store)(nil)
	_ bucket.StatsReporter        = (*Store)(nil)
	_ bucket.ListerReporter       = (*Store)(nil)
	_ bucket.Lister               = lister{}
)

// OpenURL opens the store at a URL of the form "s3://bucket[/prefix]"
// (prefix may be empty or multi-level). See Open.
func OpenURL(ctx context.Context, storeURL string, opts Options) (*Store, error) {
	bkt, prefix, err := bucket.ParseURL("s3", storeURL)
	if err != nil {
		return nil, err
	}
	return Open(ctx, bkt, prefix, opts)
}

// Open opens the datastore below prefix in bucket. It loads the AWS
// configuration (environment, shared config/credentials files and profiles,
// web identity, IMDS), applies opts on top, and detects the layout: PBS4 if
// any object exists below "<prefix>/.cnt/", else plain; with opts.Create, a
// prefix holding no datastore content yet gets PBS4. It fails if the bucket
// cannot be listed (missing bucket: chunkstore.ErrNotFound; refused:
// chunkstore.ErrDenied).
func Open(ctx context.Context, bkt, prefix string, opts Options) (*Store, error) {
	s := &Store{
		bucket:   bkt,
		keys:     bucket.Keys{Prefix: strings.Trim(prefix, "/")},
		pageSize: int32(min(max(0, opts.ListPageSize), 1000)),
		perStore: opts.PerStore,
		label:    opts.Label,
	}
	s.url = s.keys.URL("s3", bkt)
	conc := opts.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	po := opts.Policy
	if po.Concurrency <= 0 {
		po.Concurrency = conc
	}
	s.pol = bucket.NewPolicy(po)
	var pin *[sha256.Size]byte
	if opts.Fingerprint != "" {
		fp, err := ParseFingerprint(opts.Fingerprint)
		if err != nil {
			return nil, fmt.Errorf("%s: --s3-fingerprint: %w", s.url, err)
		}
		pin = &fp
	}
	// Trust from the environment is read here, once: a file that cannot
	// be used is a configuration error, reported at once rather than
	// retried at every request. AWS_CA_BUNDLE is applied by the store's
	// own transport, on top of the system roots (the SDK's own handling
	// loses to SSL_CERT_FILE's roots in that transport).
	var roots *x509.CertPool
	if pin == nil {
		if err := bucket.CheckTrustEnv(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.url, err)
		}
		r, err := bucket.RootsWithBundle("AWS_CA_BUNDLE")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.url, err)
		}
		roots = r
	}
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { s.tuneTransport(tr, conc, pin, roots, opts.DialContext) })
	lo := []func(*config.LoadOptions) error{
		config.WithHTTPClient(hc),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		// Errors are returned; the SDK's warnings (e.g. about an unread
		// body after a reset) would only clutter the output.
		config.WithLogger(logging.Nop{}),
	}
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	creds, err := credentialOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.url, err)
	}
	lo = append(lo, creds...)
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil && (opts.Profile != "" || opts.CredentialsFile != "") {
		// The credentials source this store names is not usable: outside
		// the data, as refused credentials are.
		return nil, fmt.Errorf("%s: %w: loading AWS configuration: %w", s.url, chunkstore.ErrDenied, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: loading AWS configuration: %w", s.url, err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	// The stall watchdog judges transfers by progress; there is no total
	// timeout. It wraps the transport the configuration built (custom CA
	// bundle and pinning included), under the SDK's redirect rules.
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		if c, ok := bc.Freeze().(*http.Client); ok {
			w := *c
			w.Transport = s.pol.Transport(c.Transport)
			cfg.HTTPClient = &w
		}
	}
	s.newClient(cfg, opts, cfg.Region, false)
	err = s.keys.Detect(ctx, lister{s}, s.url, opts.Layout, opts.Create)
	// A bucket in another region: follow the region the server names
	// (301 PermanentRedirect, 400 AuthorizationHeaderMalformed), as the AWS
	// CLI does.
	if r := bucketRegion(err); r != "" && r != s.region {
		s.newClient(cfg, opts, r, false)
		s.followed = append(s.followed, "region "+r)
		err = s.keys.Detect(ctx, lister{s}, s.url, opts.Layout, opts.Create)
	}
	// A custom endpoint by host name whose virtual-host name
	// (<bucket>.<host>) does not resolve: path style, as most self-hosted
	// services expect.
	if err != nil && opts.PathStyle == PathStyleAuto && !s.pathStyle && s.endpoint != "" && noSuchHost(err) {
		s.newClient(cfg, opts, s.region, true)
		if err2 := s.keys.Detect(ctx, lister{s}, s.url, opts.Layout, opts.Create); err2 == nil || !noSuchHost(err2) {
			s.followed = append(s.followed, "path-style addressing")
			err = err2
		}
	}
	if err != nil {
		s.conns.closeAll()
		if errors.Is(err, errNoSuchBucket) {
			return nil, chunkstore.StoreMissing(s.explain(err))
		}
		return nil, s.explain(err)
	}
	return s, nil
}

// newClient (re)makes the S3 client for region; forcePath selects path-style
// addressing whatever opts.PathStyle says.
func (s *Store) newClient(cfg aws.Config, opts Options, region string, forcePath bool) {
	s.region = region
	s.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Region = region
		if opts.Endpoint != "" {
			ep := opts.Endpoint
			if !strings.Contains(ep, "://") {
				ep = "https://" + ep
			}
			o.BaseEndpoint = aws.String(strings.TrimRight(ep, "/"))
		}
		s.endpoint = aws.ToString(o.BaseEndpoint)
		switch {
		case forcePath || opts.PathStyle == PathStyleOn:
			o.UsePathStyle = true
		case opts.PathStyle == PathStyleOff:
			o.UsePathStyle = false
		default:
			o.UsePathStyle = o.UsePathStyle || isLocalEndpoint(s.endpoint)
		}
		s.pathStyle = o.UsePathStyle
		// One attempt per call: the bucket policy retries (s.do). The
		// client still corrects its clock skew from a response's Date, for
		// the next attempt.
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 0
	})
}

// Followed returns what Open corrected on its own, e.g. "region
// eu-central-1" or "path-style addressing" (nil if nothing).
func (s *Store) Followed() []string { return s.followed }

// explain adds to an error of Open what the user can do about it.
func (s *Store) explain(err error) error {
	var hostname x509.HostnameError
	var unknown x509.UnknownAuthorityError
	var cert *tls.CertificateVerificationError
	switch {
	case bucketRegion(err) == s.region:
		// Followed, or given, and still refused for the same region: no
		// region helps; the endpoint or a gateway in front of it loops.
		return fmt.Errorf("%w: %s: a redirect loop: the server answers %d %s naming region %s, the region the requests were already signed for (check %s and any gateway or proxy in front of it)",
			chunkstore.ErrUnavailable, s.url, httpStatus(err), errorCode(err), s.region, s.setting("--s3-endpoint", "endpoint", ""))
	case bucketRegion(err) != "":
		r := bucketRegion(err)
		return fmt.Errorf("%w (the bucket is in region %s, requests were signed for %s: give %s)", err, r, s.region, s.setting("--s3-region", "region", r))
	case noSuchHost(err) && s.endpoint != "" && !s.pathStyle:
		return fmt.Errorf("%w (virtual-hosted addressing puts the bucket name in front of the endpoint's host name, which does not resolve here: give %s)", err, s.setting("--s3-path-style", "path-style", ""))
	case errors.As(err, &hostname), errors.As(err, &unknown), errors.As(err, &cert),
		strings.Contains(err.Error(), "x509: certificate"):
		return fmt.Errorf("%w (for a self-signed endpoint certificate, give its SHA-256 fingerprint with %s, as in PBS's S3 endpoint configuration: openssl x509 -noout -fingerprint -sha256 -in CERT)", err, s.setting("--s3-fingerprint", "fingerprint", ""))
	case strings.Contains(err.Error(), "first record does not look like a TLS handshake"),
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return &hinted{err, fmt.Sprintf("the endpoint %s speaks plain HTTP, not HTTPS: write %s; an endpoint without a scheme is https", s.endpoint, s.setting("--s3-endpoint", "endpoint", "http://HOST:PORT"))}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &hinted{err, fmt.Sprintf("nothing listens at %s: check the host, port and scheme of %s", s.endpoint, s.setting("--s3-endpoint", "endpoint", ""))}
	}
	return err
}

// setting names a setting in a hint: the flag followed by value ("--s3-region
// eu-west-1"; value may be empty), and for a store with settings of its own
// (Options.PerStore) also its query parameter ("region=eu-west-1").
func (s *Store) setting(flag, param, value string) string {
	f := strings.TrimSpace(flag + " " + value)
	if !s.perStore {
		return f
	}
	if value == "" {
		value = "…"
	}
	return f + " (or " + param + "=" + value + " on the store)"
}

// sdkNoise is what the AWS SDK puts in the message of a request that got
// no HTTP answer at all (refused, TLS failed): empty status and IDs.
const sdkNoise = "https response error StatusCode: 0, RequestID: , HostID: , request send failed, "

// hinted is an opening error whose message drops sdkNoise and ends with a
// hint at the likely mistake; it wraps the error unchanged.
type hinted struct {
	err  error
	hint string
}

// Error is the error's message without sdkNoise, then the hint.
func (h *hinted) Error() string {
	return strings.Replace(h.err.Error(), sdkNoise, "", 1) + " (" + h.hint + ")"
}

// Unwrap returns the error.
func (h *hinted) Unwrap() error { return h.err }

// noSuchHost reports whether err is a host name that does not resolve.
func noSuchHost(err error) bool {
	var dns *net.DNSError
	return err != nil && errors.As(err, &dns) && dns.IsNotFound
}

// regionInMessage finds the expected region in AWS's error messages, e.g.
// "the region 'us-east-1' is wrong; expecting 'eu-central-1'", quoted with
// single or double quotes (S3 clones and gateways say `expecting
// "us-east-1"`).
var regionInMessage = regexp.MustCompile(`expecting ['"]([a-z0-9-]+)['"]`)

// bucketRegion returns the bucket's region named by a region-mismatch
// answer (301 PermanentRedirect, 400 AuthorizationHeaderMalformed or
// IllegalLocationConstraintException): the x-amz-bucket-region header, else
// the region in the message; "" for any other error.
func bucketRegion(err error) string {
	if err == nil {
		return ""
	}
	st, code := httpStatus(err), errorCode(err)
	if st != http.StatusMovedPermanently && st != http.StatusBadRequest && code != "PermanentRedirect" && code != "AuthorizationHeaderMalformed" {
		return ""
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
			return r
		}
	}
	if m := regionInMessage.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// tuneTransport sizes the connection pool for conc requests in flight and
// sets the HTTP version (bucket.ConfigureTransport: connections counted in
// the policy's stats), pins the certificate, and tracks connections so
// that Close can close them. roots, when non-nil (and no pin), are the
// certificates trusted (AWS_CA_BUNDLE on top of the system's).
func (s *Store) tuneTransport(tr *http.Transport, conc int, pin *[sha256.Size]byte, roots *x509.CertPool, dialer func(ctx context.Context, network, addr string) (net.Conn, error)) {
	dial := tr.DialContext
	if dialer != nil {
		dial = dialer
	}
	if pin == nil && roots != nil {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = roots
	}
	if pin != nil {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.InsecureSkipVerify = true // replaced by the pin below
		tr.TLSClientConfig.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("endpoint sent no certificate")
			}
			if got := sha256.Sum256(raw[0]); got != *pin {
				return &pinError{got: fingerprintString(got[:])}
			}
			return nil
		}
	}
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return s.conns.add(c), nil
	}
	bucket.ConfigureTransport(tr, s.pol.Options().HTTP, conc, s.pol.Conns())
}

// pinError is a certificate that does not match the pinned fingerprint; it
// is never retried.
type pinError struct{ got string }

func (e *pinError) Error() string {
	return fmt.Sprintf("endpoint certificate fingerprint %s does not match --s3-fingerprint", e.got)
}

// fingerprintString formats a fingerprint as PBS does: "aa:bb:…".
func fingerprintString(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(parts, ":")
}

// connSet tracks open connections.
type connSet struct {
	mu sync.Mutex
	m  map[*trackedConn]struct{}
}

type trackedConn struct {
	net.Conn
	set  *connSet
	once sync.Once
}

func (cs *connSet) add(c net.Conn) net.Conn {
	tc := &trackedConn{Conn: c, set: cs}
	cs.mu.Lock()
	if cs.m == nil {
		cs.m = map[*trackedConn]struct{}{}
	}
	cs.m[tc] = struct{}{}
	cs.mu.Unlock()
	return tc
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.m, c)
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
}

func (cs *connSet) closeAll() {
	cs.mu.Lock()
	all := make([]*trackedConn, 0, len(cs.m))
	for c := range cs.m {
		all = append(all, c)
	}
	cs.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}

// isLocalEndpoint reports whether the endpoint's host is an IP address or
// localhost, where virtual-hosted bucket names cannot resolve.
func isLocalEndpoint(ep string) bool {
	if ep == "" {
		return false
	}
	u, err := url.Parse(ep)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// lister lists the bucket for bucket.DetectLayout.
type lister struct{ s *Store }

// Lister returns a lister of the store's bucket (bucket.ListerReporter):
// keys from the bucket root, each request under the store's policy.
func (s *Store) Lister() bucket.Lister { return lister{s} }

// AnyObject reports whether any key starts with prefix (a one-key listing).
func (l lister) AnyObject(ctx context.Context, prefix string) (bool, error) {
	var out *s3.ListObjectsV2Output
	err := l.s.do(ctx, func(ctx context.Context) (err error) {
		out, err = l.s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket:  &l.s.bucket,
			Prefix:  aws.String(prefix),
			MaxKeys: aws.Int32(1),
		})
		return err
	})
	if err != nil {
		return false, mapErr(err)
	}
	return len(out.Contents) > 0, nil
}

// ListLevel lists the first page one level below prefix.
func (l lister) ListLevel(ctx context.Context, prefix string) (dirs, objects []string, err error) {
	var top *s3.ListObjectsV2Output
	err = l.s.do(ctx, func(ctx context.Context) (err error) {
		top, err = l.s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket:    &l.s.bucket,
			Prefix:    aws.String(prefix),
			Delimiter: aws.String("/"),
		})
		return err
	})
	if err != nil {
		return nil, nil, mapErr(err)
	}
	for _, cp := range top.CommonPrefixes {
		dirs = append(dirs, strings.TrimPrefix(aws.ToString(cp.Prefix), prefix))
	}
	for _, o := range top.Contents {
		objects = append(objects, strings.TrimPrefix(aws.ToString(o.Key), prefix))
	}
	return dirs, objects, nil
}

// Layout returns the layout in use (never LayoutAuto).
func (s *Store) Layout() Layout { return s.keys.Layout }

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the datastore's key prefix without surrounding '/'.
func (s *Store) Prefix() string { return s.keys.Prefix }

// Endpoint returns the S3 endpoint URL in use ("" for AWS's default).
func (s *Store) Endpoint() string { return s.endpoint }

// Retries returns how many retries (of any request) the store made so far.
func (s *Store) Retries() int64 { return s.pol.Stats().Retries }

// PolicyStats returns the request policy's counts: retries, throttled
// answers, stalls, and the changes of the GETs in flight.
func (s *Store) PolicyStats() bucket.Stats { return s.pol.Stats() }

// String returns "s3://bucket[/prefix]", followed by " (LABEL)" with
// Options.Label.
func (s *Store) String() string { return bucket.Labeled(s.url, s.label) }

func (s *Store) objURL(key string) string { return "s3://" + s.bucket + "/" + key }

// ChunkLocation returns the chunk's object URL "s3://bucket/<prefix>/.chunks/<4hex>/<hex>".
func (s *Store) ChunkLocation(d crypto.Digest) string { return s.objURL(s.keys.Chunk(d)) }

// ReadChunk downloads the chunk object for d into buf (see
// chunkstore.Store.ReadChunk) under the bucket policy: an object whose
// Content-Length exceeds limit is refused before its body is read, and a
// body without one is read only up to limit bytes. A failure while
// reading the body (reset, truncation, stall) retries the whole download;
// partial data is never returned.
func (s *Store) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	key := s.keys.Chunk(d)
	var out []byte
	err := s.pol.Do(ctx, true, func(ctx context.Context) error {
		var err error
		out, err = s.readChunkOnce(ctx, key, buf, chunkstore.ReadLimit(limit))
		return err
	}, classifyErr)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: s.objURL(key), Err: mapErr(err)})
	}
	return out, nil
}

// readChunkOnce makes one GetObject call and reads the body.
func (s *Store) readChunkOnce(ctx context.Context, key string, buf []byte, limit int64) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	body, decoded, err := bucket.DecodeBody(out.Body, aws.ToString(out.ContentEncoding))
	if err != nil {
		return nil, err
	}
	buf, err = bucket.ReadBody(body, bodySize(out.ContentLength, decoded), limit, buf)
	if err != nil && !errors.Is(err, chunkstore.ErrTooLarge) && !errors.Is(err, chunkstore.ErrEmpty) {
		err = fmt.Errorf("reading body: %w", err)
	}
	return buf, err
}

// do runs one request under the bucket policy.
func (s *Store) do(ctx context.Context, fn func(context.Context) error) error {
	return s.pol.Do(ctx, false, fn, classifyErr)
}

// bodySize is the length of a response body as announced: Content-Length,
// or -1 when there is none (Transfer-Encoding: chunked) or the body is
// decoded (Content-Encoding: gzip).
func bodySize(contentLength *int64, decoded bool) int64 {
	if contentLength == nil || *contentLength < 0 || decoded {
		return -1
	}
	return *contentLength
}

// OpenFile starts downloading the content file rel and returns its body and
// size in bytes. ctx must stay live while the body is read. If the
// connection fails mid-body, the reader resumes with a ranged GET pinned to
// the object's ETag (so a replaced object is detected, not spliced).
func (s *Store) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	key, err := s.keys.Content(rel)
	if err != nil {
		return nil, 0, err
	}
	var out *s3.GetObjectOutput
	err = s.do(ctx, func(ctx context.Context) (err error) {
		out, err = s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", s.objURL(key), mapErr(err))
	}
	body, decoded, err := bucket.DecodeBody(out.Body, aws.ToString(out.ContentEncoding))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", s.objURL(key), err)
	}
	size := bodySize(out.ContentLength, decoded)
	if size < 0 {
		// No Content-Length (chunked), or a decoded body: the stored size,
		// if the server tells it, is what the reader must deliver.
		var head *s3.HeadObjectOutput
		if err := s.do(ctx, func(ctx context.Context) (err error) {
			head, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
			return err
		}); err == nil &&
			head.ContentLength != nil && *head.ContentLength > 0 && !bucket.IsGzip(aws.ToString(head.ContentEncoding)) {
			size = *head.ContentLength
		}
	}
	etag := aws.ToString(out.ETag)
	if decoded {
		etag = "" // a decoded stream cannot be resumed by byte range
	}
	return &resumingReader{s: s, ctx: ctx, key: key, etag: etag, size: size, body: body}, size, nil
}

type resumingReader struct {
	s       *Store
	ctx     context.Context
	key     string
	etag    string // "" disables resuming
	size    int64  // -1: unknown, read to the end
	off     int64
	body    io.ReadCloser
	retries int
	failed  time.Time // first failure since the last byte read
	err     error
}

func (r *resumingReader) Read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.body == nil {
			if err := r.reopen(); err != nil {
				r.err = err
				return 0, err
			}
		}
		n, err := r.body.Read(p)
		r.off += int64(n)
		if n > 0 {
			r.failed = time.Time{}
		}
		long := r.size >= 0 && r.off > r.size
		if (err == nil && !long) || (err == io.EOF && (r.size < 0 || r.off == r.size)) {
			return n, err
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.body.Close()
		r.body = nil
		if r.failed.IsZero() {
			r.failed = time.Now()
		}
		switch {
		case long:
			r.err = fmt.Errorf("%s: object longer than its announced %d bytes", r.s.objURL(r.key), r.size)
		case r.etag == "" || r.ctx.Err() != nil:
			r.err = fmt.Errorf("%s: reading at offset %d: %w", r.s.objURL(r.key), r.off, err)
		case !r.s.pol.MayRetry(r.failed):
			r.err = fmt.Errorf("%w: %s: reading at offset %d: still failing after %v: %w", chunkstore.ErrUnavailable, r.s.objURL(r.key), r.off, time.Since(r.failed).Round(time.Millisecond), err)
		default:
			r.retries++
			if serr := r.s.pol.Pause(r.ctx, r.retries); serr != nil {
				r.err = fmt.Errorf("%s: reading at offset %d: %w (retry aborted: %v)", r.s.objURL(r.key), r.off, err, serr)
			}
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (r *resumingReader) reopen() error {
	var out *s3.GetObjectOutput
	err := r.s.do(r.ctx, func(ctx context.Context) (err error) {
		out, err = r.s.client.GetObject(ctx, &s3.GetObjectInput{
			Bucket:  &r.s.bucket,
			Key:     &r.key,
			Range:   aws.String(fmt.Sprintf("bytes=%d-", r.off)),
			IfMatch: aws.String(r.etag),
		})
		return err
	})
	if err != nil {
		if httpStatus(err) == http.StatusPreconditionFailed {
			return fmt.Errorf("%s: object was replaced while being read", r.s.objURL(r.key))
		}
		return fmt.Errorf("%s: resuming at offset %d: %w", r.s.objURL(r.key), r.off, mapErr(err))
	}
	if bucket.IsGzip(aws.ToString(out.ContentEncoding)) {
		// An encoded range cannot be spliced onto the plain bytes read so far.
		out.Body.Close()
		return fmt.Errorf("%s: resuming at offset %d: the server sent the rest gzip-encoded", r.s.objURL(r.key), r.off)
	}
	r.body = out.Body
	return nil
}

func (r *resumingReader) Close() error {
	if r.body != nil {
		err := r.body.Close()
		r.body = nil
		return err
	}
	return nil
}

// ListFiles lists every content object below dir (see
// chunkstore.Store.ListFiles) with ListObjectsV2, checking every page with
// bucket.Listing: a page truncated without a continuation token, or a
// repeated token or page make it continue with start-after (the greatest
// key seen); keys listed twice are dropped; what cannot be completed that
// way fails with bucket.ErrListing, never returning part of the listing.
func (s *Store) ListFiles(ctx context.Context, dir string) ([]chunkstore.FileInfo, error) {
	base, err := s.keys.Content(dir)
	if err != nil {
		return nil, err
	}
	base += "/"
	var files []chunkstore.FileInfo
	var bad badKeys
	l := bucket.Listing{Provider: "S3 ListObjectsV2", Where: s.objURL(base), Prefix: base}
	for {
		in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &base}
		if s.pageSize > 0 {
			in.MaxKeys = aws.Int32(s.pageSize)
		}
		token, after, useAfter := l.Request()
		if token != "" {
			in.ContinuationToken = aws.String(token)
		}
		if useAfter {
			in.StartAfter = aws.String(after)
		}
		var page *s3.ListObjectsV2Output
		err := s.do(ctx, func(ctx context.Context) (err error) {
			page, err = s.client.ListObjectsV2(ctx, in, withEncodingProbe)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.objURL(base), mapErr(err))
		}
		encoded := keysURLEncoded(page)
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if encoded {
				// Keys percent-encoded although not asked for (Apache Ozone,
				// DigitalOcean Spaces, HCP): the page says so.
				dec, err := url.QueryUnescape(key)
				if err != nil {
					bad.add(key)
					continue
				}
				key = dec
			}
			keep, err := l.Key(key)
			if err != nil {
				return nil, err
			}
			if rel, ok := s.keys.RelFromKey(key); keep && ok {
				files = append(files, chunkstore.FileInfo{Path: rel, Size: aws.ToInt64(o.Size)})
			}
		}
		more, err := l.EndPage(aws.ToBool(page.IsTruncated), aws.ToString(page.NextContinuationToken))
		if err != nil {
			return nil, err
		}
		if !more {
			if bad.n > 0 {
				s.Warn("", fmt.Sprintf("pbsdirect: warning: %s: %d listed key(s) could not be decoded (the listing says EncodingType url), e.g. %q: left out", s.objURL(base), bad.n, bad.first))
			}
			return files, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// badKeys counts the keys of a listing that could not be read.
type badKeys struct {
	n     int
	first string // the first of them
}

func (b *badKeys) add(key string) {
	if b.n == 0 {
		b.first = key
	}
	b.n++
}

// WriteChunk uploads the chunk blob unless the object exists: a PUT with
// "If-None-Match: *" (412 means it existed, 409 is retried). If the server
// answers that conditional PUT with 501 Not Implemented, the store falls
// back to HEAD then PUT for the rest of its life. After a 412 a HEAD checks
// the size: an existing 0-byte object is no chunk and is overwritten. Each
// PUT carries the writer's time (writtenMeta).
func (s *Store) WriteChunk(ctx context.Context, d crypto.Digest, blob []byte) (bool, error) {
	key := s.keys.Chunk(d)
	if !s.noCondPut.Load() {
		err := s.do(ctx, func(ctx context.Context) error {
			_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
				Bucket:        &s.bucket,
				Key:           &key,
				Body:          bytes.NewReader(blob),
				ContentLength: aws.Int64(int64(len(blob))),
				ContentType:   aws.String("application/octet-stream"),
				IfNoneMatch:   aws.String("*"),
				Metadata:      writerMeta(),
			})
			return err
		})
		switch {
		case err == nil:
			return false, nil
		case httpStatus(err) == http.StatusPreconditionFailed:
			// The object exists, but a 0-byte one (an evicted-chunk marker
			// copied from a PBS 4 cache, §1.2) is no chunk: check below.
		case isNotImplemented(err):
			s.noCondPut.Store(true)
		default:
			return false, fmt.Errorf("chunk %s: %s: %w", d, s.objURL(key), mapErr(err))
		}
	}
	var head *s3.HeadObjectOutput
	err := s.do(ctx, func(ctx context.Context) (err error) {
		head, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	})
	switch {
	case err == nil && aws.ToInt64(head.ContentLength) > 0:
		return true, nil
	case err != nil && !absent(err):
		return false, fmt.Errorf("chunk %s: %s: %w", d, s.objURL(key), mapErr(err))
	}
	if err := s.put(ctx, key, blob); err != nil {
		return false, fmt.Errorf("chunk %s: %w", d, err)
	}
	return false, nil
}

// WriteFile uploads the content file rel, replacing any existing object,
// with the writer's time (writtenMeta).
func (s *Store) WriteFile(ctx context.Context, rel string, data []byte) error {
	key, err := s.keys.Content(rel)
	if err != nil {
		return err
	}
	return s.put(ctx, key, data)
}

func (s *Store) put(ctx context.Context, key string, data []byte) error {
	err := s.do(ctx, func(ctx context.Context) error {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        &s.bucket,
			Key:           &key,
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
			ContentType:   aws.String("application/octet-stream"),
			Metadata:      writerMeta(),
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", s.objURL(key), mapErr(err))
	}
	return nil
}

// Close closes the store's HTTP connections. Readers from OpenFile fail
// after it.
func (s *Store) Close() error {
	s.conns.closeAll()
	return nil
}

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isNotImplemented(err error) bool {
	st, code := httpStatus(err), errorCode(err)
	return st == http.StatusNotImplemented || code == "NotImplemented"
}

// mapErr wraps chunkstore.ErrNotFound around a 404 NoSuchKey only (S3's
// definitive word that the object is not there), chunkstore.ErrUnavailable
// around every other 404 (NoSuchBucket: the bucket itself is gone, or a
// wrong endpoint; no code or another one: a proxy or ingress answered, or
// a HEAD, whose 404 has no body; see headErr) and a 400 InvalidBucketName
// (the endpoint takes no bucket of that name), chunkstore.ErrDenied
// around 401s, 403s and expired temporary credentials (400 ExpiredToken)
// and chunkstore.ErrUnavailable around unreachable endpoints and transient
// failures (429, 5xx, timeouts) that outlasted the retries. Any other error
// is returned as is: it proves nothing about the data (chunkstore.Proven is
// false), so the run fails as one that could not complete.
func mapErr(err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var nsb *types.NoSuchBucket
	st, code := httpStatus(err), errorCode(err)
	switch {
	case strings.Contains(err.Error(), "failed to refresh cached credentials") || strings.Contains(err.Error(), "failed to retrieve credentials"):
		return fmt.Errorf("%w: no usable AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (on EC2, ECS or EKS: the instance, task or pod role): %v", chunkstore.ErrDenied, err)
	case code == "NoSuchKey" || errors.As(err, &nsk):
		// The SDK's text (operation, request IDs) adds nothing to a 404.
		return fmt.Errorf("%w (NoSuchKey)", chunkstore.ErrNotFound)
	case code == "NoSuchBucket" || errors.As(err, &nsb):
		return fmt.Errorf("%w: %w", chunkstore.ErrUnavailable, errNoSuchBucket)
	case code == "InvalidBucketName":
		// The endpoint takes no bucket of this name: as NoSuchBucket, the
		// store is not there (a wrong endpoint, or a name it does not
		// allow), which proves nothing about the data.
		return fmt.Errorf("%w: 400 InvalidBucketName: the endpoint takes no bucket of this name (a wrong endpoint? a name it does not allow?): this proves nothing about the data", chunkstore.ErrUnavailable)
	case st == http.StatusNotFound || errors.As(err, &nf):
		what := "without an S3 error code"
		if code != "" && code != "NotFound" {
			what = fmt.Sprintf("with error code %q", code)
		}
		return fmt.Errorf("%w: HTTP 404 %s, not S3's NoSuchKey (a proxy or ingress in the way? a wrong endpoint?): this proves nothing about the data", chunkstore.ErrUnavailable, what)
	case code == "RequestTimeTooSkewed":
		return fmt.Errorf("%w: %v (this machine's clock differs from the server's by more than it allows, even after correcting by the server's Date: set the system clock)", chunkstore.ErrDenied, err)
	case expiredCodes[code]:
		return fmt.Errorf("%w: %v (temporary credentials expired: refresh them, e.g. aws sso login or a new AWS_SESSION_TOKEN, and run again; a restore continues with --resume)", chunkstore.ErrDenied, err)
	case st == http.StatusForbidden || st == http.StatusUnauthorized || code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		return fmt.Errorf("%w: %v", chunkstore.ErrDenied, err)
	case bucket.Unreachable(err) || st == http.StatusTooManyRequests || st >= 500 || classifyErr(err) != bucket.Fatal:
		if errors.Is(err, chunkstore.ErrUnavailable) {
			return err // the request policy said so already
		}
		return fmt.Errorf("%w: %w", chunkstore.ErrUnavailable, err)
	}
	if r := bucketRegion(err); r != "" {
		return fmt.Errorf("%w (the bucket is in region %s: give --s3-region %s)", err, r, r)
	}
	return err
}

// absent reports whether err, the error of a HEAD request before a write,
// lets the write go ahead: a 404 other than NoSuchBucket. A HEAD's 404 has
// no body, so it cannot prove an object missing (see headErr); taking it
// for absent here costs at most one upload, and a bucket that is not there
// fails that upload.
func absent(err error) bool {
	return httpStatus(err) == http.StatusNotFound && errorCode(err) != "NoSuchBucket"
}

// errNoSuchBucket is wrapped by mapErr's errors for a 404 NoSuchBucket.
var errNoSuchBucket = errors.New("404 NoSuchBucket: the bucket does not exist (deleted? a wrong endpoint or region?): this proves nothing about the data")

// expiredCodes are the error codes of S3 (a 400, not a 403) and its clones
// for temporary credentials (a session token) that expired or are no
// longer valid.
var expiredCodes = map[string]bool{"ExpiredToken": true, "TokenRefreshRequired": true, "InvalidToken": true, "ExpiredTokenException": true}

// skewCodes are the error codes after which the SDK corrects its clock by
// the server's Date header and retries (its clock skew correction).
var skewCodes = map[string]bool{"RequestTimeTooSkewed": true, "SignatureDoesNotMatch": true, "InvalidSignatureException": true, "AuthFailure": true, "AccessDeniedException": true, "RequestExpired": true}

// classifyErr judges a failed attempt for the bucket policy: never an
// unreachable endpoint (bucket.Unreachable), 403 (except one the client's
// clock skew correction can fix on the next attempt), 404, 412, 501 or a
// chunk object that is empty or too large, or a certificate that does not
// match --s3-fingerprint; throttling for 429 and the SDK's
// throttle codes (SlowDown, …); a retry for 409 (conditional write
// conflict), other 5xx, truncated responses, stalls and what the SDK deems
// retryable (resets, timeouts).
func classifyErr(err error) bucket.Class {
	var pe *pinError
	if errors.Is(err, chunkstore.ErrEmpty) || errors.Is(err, chunkstore.ErrTooLarge) || bucket.Unreachable(err) || errors.As(err, &pe) {
		return bucket.Fatal
	}
	// The SDK marks a 403 it can fix by correcting the clock skew from the
	// response's Date header as retryable; the next attempt is corrected.
	var re interface{ RetryableError() bool }
	if skewCodes[errorCode(err)] && errors.As(err, &re) && re.RetryableError() {
		return bucket.Transient
	}
	switch st := httpStatus(err); {
	case st == http.StatusForbidden || st == http.StatusNotFound || st == http.StatusPreconditionFailed || st == http.StatusNotImplemented:
		return bucket.Fatal
	case st == http.StatusTooManyRequests || retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary:
		return bucket.Throttle
	case st == http.StatusConflict || st >= 500:
		return bucket.Transient
	}
	var se *bucket.StallError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
		return bucket.Transient
	}
	if retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return bucket.Transient
	}
	return bucket.Fatal
}

// ClaimSnapshot creates the snapshot's claim marker with a conditional PUT
// (If-None-Match: *); release deletes it (see chunkstore.SnapshotClaimer).
// A marker that exists fails the claim with chunkstore.ErrSnapshotBusy,
// unless it holds this claim's own content (a retried PUT whose first
// attempt landed). On a server without conditional PUTs (501) the claim
// falls back to HEAD then PUT, which cannot exclude a writer that starts
// in between.
func (s *Store) ClaimSnapshot(ctx context.Context, snapDir string) (func() error, error) {
	key, err := s.keys.Content(path.Join(snapDir, chunkstore.ClaimMarker))
	if err != nil {
		return nil, err
	}
	mine := chunkstore.NewClaimMarker()
	release := func() error {
		if err := s.do(context.WithoutCancel(ctx), func(ctx context.Context) error {
			_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
			return err
		}); err != nil {
			return fmt.Errorf("remove claim %s: %w", s.objURL(key), mapErr(err))
		}
		return nil
	}
	busy := func() error {
		var held []byte
		if rc, _, err := s.OpenFile(ctx, path.Join(snapDir, chunkstore.ClaimMarker)); err == nil {
			held, _ = io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
		}
		if bytes.Equal(held, mine) {
			return nil
		}
		return chunkstore.ClaimBusyError(snapDir, s.objURL(key), held)
	}
	if !s.noCondPut.Load() {
		err := s.do(ctx, func(ctx context.Context) error {
			_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
				Bucket:        &s.bucket,
				Key:           &key,
				Body:          bytes.NewReader(mine),
				ContentLength: aws.Int64(int64(len(mine))),
				ContentType:   aws.String("application/json"),
				IfNoneMatch:   aws.String("*"),
			})
			return err
		})
		switch {
		case err == nil:
			// Read it back: a server whose conditional PUT is not atomic
			// (a check, then a write) may have let another claim through
			// at the same moment; the marker tells which one landed.
			if err := busy(); err != nil {
				return nil, err
			}
			return release, nil
		case httpStatus(err) == http.StatusPreconditionFailed:
			if err := busy(); err != nil {
				return nil, err
			}
			return release, nil
		case isNotImplemented(err):
			s.noCondPut.Store(true)
		default:
			return nil, fmt.Errorf("claim %s: %w", s.objURL(key), mapErr(err))
		}
	}
	if err := s.do(ctx, func(ctx context.Context) error {
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
		return err
	}); err == nil {
		return nil, busy()
	} else if !absent(err) {
		return nil, fmt.Errorf("claim %s: %w", s.objURL(key), mapErr(err))
	}
	if err := s.put(ctx, key, mine); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return release, nil
}
