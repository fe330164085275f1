// Package gcsstore is the chunkstore.Store backend for Google Cloud Storage,
// built on cloud.google.com/go/storage (JSON API for metadata, listing and
// uploads; the library's default XML API for downloads) with Application
// Default Credentials. STORAGE_EMULATOR_HOST is honoured (no credentials
// needed then), as is an explicit endpoint.
//
// Build the pbsdirect binary with -tags disable_grpc_modules: this package
// never uses the gRPC transport.
//
// Layouts, retries and error mapping are those of package s3store: PBS 4
// (".cnt/") or plain-copy layout detected at Open; the library makes one
// attempt per call and the bucket request policy (bucket.Policy) retries:
// 5xx, 408, connection resets (also mid-body) and stalled transfers with
// exponential backoff and jitter, throttling (429, 503, rateLimitExceeded)
// after its Retry-After with fewer chunk GETs in flight, until the same
// request has failed for the retry window; 404 → chunkstore.ErrNotFound and
// 403 → chunkstore.ErrDenied, never retried.
package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

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

// Defaults used for zero Options fields.
const (
	DefaultConcurrency = bucket.DefaultConcurrency
)

// Options configures Open. The zero value uses Application Default
// Credentials, the public endpoint (or STORAGE_EMULATOR_HOST) and the
// defaults above.
type Options struct {
	// Endpoint is the base URL of a GCS-compatible server, e.g.
	// "http://127.0.0.1:4443" (the JSON API is expected below
	// "/storage/v1/", downloads at "/bucket/object"). Empty: the public
	// endpoint, or STORAGE_EMULATOR_HOST when set.
	Endpoint string
	// NoAuth sends requests without credentials (emulators). Implied when
	// STORAGE_EMULATOR_HOST is set.
	NoAuth bool
	// Label, when set, follows the store's URL in String(), in
	// parentheses ("gs://b/p (host:4443)"): the endpoint of a store given
	// one of its own, so that stores of the same bucket and prefix at
	// other endpoints are told apart in reports. Messages of the store's
	// own errors keep the bare URL.
	Label string
	// CredentialsFile is a Google credentials JSON file (a service account
	// key, an authorized user's or an external account's configuration,
	// as gcloud writes them) used in place of Application Default
	// Credentials. Empty: GOOGLE_APPLICATION_CREDENTIALS and the rest of
	// the default chain.
	CredentialsFile string
	// Concurrency is the number of requests the caller intends to have in
	// flight; the connection pool keeps at least that many idle connections
	// per host. 0 means DefaultConcurrency.
	Concurrency int
	// Policy is the request policy (--io-timeout, --retry-for, backoff);
	// its Concurrency, when 0, is Concurrency.
	Policy bucket.Options
	// ListPageSize is the number of objects asked for per listing page
	// (maxResults); 0 means 1000, the GCS maximum.
	ListPageSize int
	// Layout forces a layout; LayoutAuto detects it (see Open).
	Layout Layout
	// Create opens the store for writing (backup): an empty prefix gets the
	// PBS 4 layout unless Layout says otherwise.
	Create bool
}

// Store is a datastore in a GCS bucket. It implements chunkstore.Store and
// is safe for concurrent use.
type Store struct {
	client   *storage.Client
	bucket   *storage.BucketHandle
	name     string
	keys     bucket.Keys
	url      string
	pol      *bucket.Policy
	pageSize int
	// label is Options.Label.
	label string
	// Warnings say what listings of this store leave out (WarnTo).
	chunkstore.Warnings
}

var (
	_ chunkstore.WriteStore      = (*Store)(nil)
	_ chunkstore.SnapshotClaimer = (*Store)(nil)
	_ chunkstore.ChunkStatter    = (*Store)(nil)
	_ chunkstore.ChunkReplacer   = (*Store)(nil)
	_ chunkstore.Warner          = (*Store)(nil)
	_ bucket.LayoutReporter      = (*Store)(nil)
	_ bucket.StatsReporter       = (*Store)(nil)
	_ bucket.ListerReporter      = (*Store)(nil)
	_ bucket.Lister              = lister{}
)

// OpenURL opens the store at a URL of the form "gs://bucket[/prefix]". See
// Open.
func OpenURL(ctx context.Context, storeURL string, opts Options) (*Store, error) {
	bkt, prefix, err := bucket.ParseURL("gs", storeURL)
	if err != nil {
		return nil, err
	}
	return Open(ctx, bkt, prefix, opts)
}

// Open opens the datastore below prefix in bucket and detects its layout:
// PBS4 if any object exists below "<prefix>/.cnt/", else plain; with
// opts.Create, a prefix holding no datastore content yet gets PBS4. It fails
// without usable credentials (chunkstore.ErrDenied; unless NoAuth or
// STORAGE_EMULATOR_HOST) and if
// the bucket cannot be listed (missing: chunkstore.ErrNotFound; refused:
// chunkstore.ErrDenied).
func Open(ctx context.Context, bkt, prefix string, opts Options) (*Store, error) {
	s := &Store{
		name:     bkt,
		keys:     bucket.Keys{Prefix: strings.Trim(prefix, "/")},
		pageSize: max(0, opts.ListPageSize),
		label:    opts.Label,
	}
	s.url = s.keys.URL("gs", bkt)
	conc := opts.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	po := opts.Policy
	if po.Concurrency <= 0 {
		po.Concurrency = conc
	}
	s.pol = bucket.NewPolicy(po)

	if err := bucket.CheckTrustEnv(); err != nil {
		// A configuration error: reported at once, not retried.
		return nil, fmt.Errorf("%s: %w", s.url, err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	bucket.ConfigureTransport(base, po.HTTP, conc, s.pol.Conns())
	// The stall watchdog judges transfers by progress; no total timeout.
	watched := s.pol.Transport(base)
	var copts []option.ClientOption
	if opts.Endpoint != "" {
		ep, err := jsonEndpoint(opts.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.url, err)
		}
		copts = append(copts, option.WithEndpoint(ep))
	}
	if opts.NoAuth || os.Getenv("STORAGE_EMULATOR_HOST") != "" {
		copts = append(copts, option.WithoutAuthentication(), option.WithHTTPClient(&http.Client{Transport: watched}))
	} else {
		auth := []option.ClientOption{option.WithScopes(storage.ScopeReadWrite)}
		if opts.CredentialsFile != "" {
			o, err := credentialsFileOption(opts.CredentialsFile)
			if err != nil {
				return nil, fmt.Errorf("%s: %w: %w", s.url, chunkstore.ErrDenied, err)
			}
			auth = append(auth, o)
		}
		rt, err := htransport.NewTransport(ctx, watched, auth...)
		if err != nil && opts.CredentialsFile != "" {
			return nil, fmt.Errorf("%s: %w: credentials file %s: %w", s.url, chunkstore.ErrDenied, opts.CredentialsFile, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: no usable Google Application Default Credentials: %w (set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run 'gcloud auth application-default login', or use STORAGE_EMULATOR_HOST for an emulator)", s.url, chunkstore.ErrDenied, err)
		}
		copts = append(copts, option.WithHTTPClient(&http.Client{Transport: rt}))
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.url, err)
	}
	// One attempt per call: the bucket policy retries (s.do).
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	s.client = client
	s.bucket = client.Bucket(bkt)
	if err := s.keys.Detect(ctx, lister{s}, s.url, opts.Layout, opts.Create); err != nil {
		client.Close()
		if errors.Is(err, storage.ErrBucketNotExist) {
			return nil, chunkstore.StoreMissing(err)
		}
		return nil, err
	}
	return s, nil
}

// jsonEndpoint turns a server base URL into the JSON API endpoint.
func jsonEndpoint(ep string) (string, error) {
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("invalid GCS endpoint %q", ep)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/storage/v1/"
	}
	return u.String(), nil
}

// lister lists the bucket for bucket.DetectLayout.
type lister struct{ s *Store }

// Lister returns a lister of the store's bucket (bucket.ListerReporter):
// keys from the bucket root, each request under the store's policy.
func (s *Store) Lister() bucket.Lister { return lister{s} }

// AnyObject reports whether any object's name starts with prefix.
func (l lister) AnyObject(ctx context.Context, prefix string) (bool, error) {
	found, err := l.s.anyObject(ctx, prefix)
	if err != nil {
		return false, mapErr(err)
	}
	return found, nil
}

// ListLevel lists one level below prefix.
func (l lister) ListLevel(ctx context.Context, prefix string) (dirs, objects []string, err error) {
	q := &storage.Query{Prefix: prefix, Delimiter: "/"}
	q.SetAttrSelection([]string{"Name"})
	err = l.s.list(ctx, q, func(a *storage.ObjectAttrs) {
		if a.Prefix != "" {
			dirs = append(dirs, strings.TrimPrefix(a.Prefix, prefix))
		}
		if a.Name != "" {
			objects = append(objects, strings.TrimPrefix(a.Name, prefix))
		}
	})
	if err != nil {
		return nil, nil, mapErr(err)
	}
	return dirs, objects, nil
}

// anyObject reports whether any object's name starts with prefix.
func (s *Store) anyObject(ctx context.Context, prefix string) (bool, error) {
	var found bool
	err := s.do(ctx, func(ctx context.Context) error {
		q := &storage.Query{Prefix: prefix}
		q.SetAttrSelection([]string{"Name"})
		it := s.bucket.Objects(ctx, q)
		it.PageInfo().MaxSize = 1
		_, err := it.Next()
		found = err == nil
		if err == iterator.Done {
			return nil
		}
		return err
	})
	return found, err
}

// list calls fn for every object (and, with a delimiter, prefix) q lists;
// a listing that fails part way is retried from its start under the
// policy, after fn has seen the objects listed until then again, so fn must
// not mind seeing one twice.
func (s *Store) list(ctx context.Context, q *storage.Query, fn func(*storage.ObjectAttrs)) error {
	return s.do(ctx, func(ctx context.Context) error {
		it := s.bucket.Objects(ctx, q)
		for {
			a, err := it.Next()
			if err == iterator.Done {
				return nil
			}
			if err != nil {
				return err
			}
			fn(a)
		}
	})
}

// do runs one request under the bucket policy.
func (s *Store) do(ctx context.Context, fn func(context.Context) error) error {
	return s.pol.Do(ctx, false, fn, classifyErr)
}

// Layout returns the layout in use (never LayoutAuto).
func (s *Store) Layout() Layout { return s.keys.Layout }

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.name }

// Prefix returns the datastore's key prefix without surrounding '/'.
func (s *Store) Prefix() string { return s.keys.Prefix }

// Retries returns how many retries (of any request) the store made so far.
func (s *Store) Retries() int64 { return s.pol.Stats().Retries }

// PolicyStats returns the request policy's counts: retries, throttled
// answers, stalls, and the changes of the GETs in flight.
func (s *Store) PolicyStats() bucket.Stats { return s.pol.Stats() }

// String returns "gs://bucket[/prefix]", followed by " (LABEL)" with
// Options.Label.
func (s *Store) String() string { return bucket.Labeled(s.url, s.label) }

func (s *Store) objURL(key string) string { return "gs://" + s.name + "/" + key }

// ChunkLocation returns the chunk's object URL "gs://bucket/<prefix>/.chunks/<4hex>/<hex>".
func (s *Store) ChunkLocation(d crypto.Digest) string { return s.objURL(s.keys.Chunk(d)) }

// ReadChunk downloads the chunk object for d into buf (see
// chunkstore.Store.ReadChunk) under the bucket policy: an object larger
// than limit is refused by its size before its body is read. A failure while
// reading the body retries the whole download; partial data is never
// returned.
func (s *Store) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	key := s.keys.Chunk(d)
	out, err := s.readObject(ctx, key, buf, limit)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: s.objURL(key), Err: mapErr(err)})
	}
	return out, nil
}

// readObject downloads the object key into buf, at most limit bytes
// (chunkstore.ReadLimit), under the bucket policy; errors are not mapped.
func (s *Store) readObject(ctx context.Context, key string, buf []byte, limit int) ([]byte, error) {
	var out []byte
	err := s.pol.Do(ctx, true, func(ctx context.Context) error {
		r, err := s.bucket.Object(key).NewReader(ctx)
		if err != nil {
			return err
		}
		defer r.Close()
		// Size is -1 for a body without Content-Length or one decoded on
		// the way (an object stored with Content-Encoding gzip): read to
		// its end, bounded by the limit.
		out, err = bucket.ReadBody(r, r.Attrs.Size, chunkstore.ReadLimit(limit), buf)
		if err != nil && !errors.Is(err, chunkstore.ErrTooLarge) && !errors.Is(err, chunkstore.ErrEmpty) {
			err = fmt.Errorf("reading body: %w", err)
		}
		return err
	}, classifyErr)
	return out, err
}

// OpenFile starts downloading the content file rel and returns its reader
// and size in bytes. ctx must stay live while the reader is used; the
// library resumes interrupted downloads.
func (s *Store) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	key, err := s.keys.Content(rel)
	if err != nil {
		return nil, 0, err
	}
	var r *storage.Reader
	err = s.do(ctx, func(ctx context.Context) (err error) {
		r, err = s.bucket.Object(key).NewReader(ctx)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", s.objURL(key), mapErr(err))
	}
	return &namedReader{r: r, name: s.objURL(key)}, r.Attrs.Size, nil
}

// namedReader names the object in read errors.
type namedReader struct {
	r    *storage.Reader
	name string
}

func (n *namedReader) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", n.name, err)
	}
	return k, err
}

func (n *namedReader) Close() error { return n.r.Close() }

// listPageSize is the number of objects asked for per listing page:
// Options.ListPageSize, or 1000.
func (s *Store) listPageSize() int {
	if s.pageSize > 0 {
		return s.pageSize
	}
	return 1000
}

// ListFiles lists every content object below dir (see
// chunkstore.Store.ListFiles) page by page, checking every page with
// bucket.Listing: a repeated page token or a repeated page make it continue
// with startOffset (the greatest key seen); what cannot
// be completed that way fails with bucket.ErrListing, never returning part
// of the listing.
func (s *Store) ListFiles(ctx context.Context, dir string) ([]chunkstore.FileInfo, error) {
	base, err := s.keys.Content(dir)
	if err != nil {
		return nil, err
	}
	base += "/"
	var files []chunkstore.FileInfo
	l := bucket.Listing{Provider: "GCS objects.list", Where: s.objURL(base), Prefix: base}
	for {
		q := &storage.Query{Prefix: base}
		token, after, useAfter := l.Request()
		if useAfter {
			q.StartOffset = after
		}
		q.SetAttrSelection([]string{"Name", "Size"})
		var page []*storage.ObjectAttrs
		var next string
		err := s.do(ctx, func(ctx context.Context) (err error) {
			page = page[:0]
			next, err = iterator.NewPager(s.bucket.Objects(ctx, q), s.listPageSize(), token).NextPage(&page)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.objURL(base), mapErr(err))
		}
		for _, a := range page {
			keep, err := l.Key(a.Name)
			if err != nil {
				return nil, err
			}
			if rel, ok := s.keys.RelFromKey(a.Name); keep && ok {
				files = append(files, chunkstore.FileInfo{Path: rel, Size: a.Size})
			}
		}
		more, err := l.EndPage(next != "", next)
		if err != nil {
			return nil, err
		}
		if !more {
			return files, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// WriteChunk uploads the chunk blob unless the object exists (precondition
// ifGenerationMatch=0; 412 means it existed). An existing 0-byte object is
// no chunk and is overwritten.
func (s *Store) WriteChunk(ctx context.Context, d crypto.Digest, blob []byte) (bool, error) {
	key := s.keys.Chunk(d)
	obj := s.bucket.Object(key)
	err := s.upload(ctx, obj.If(storage.Conditions{DoesNotExist: true}), blob)
	if err == nil {
		return false, nil
	}
	if status(err) != http.StatusPreconditionFailed {
		return false, fmt.Errorf("chunk %s: %s: %w", d, s.objURL(key), mapErr(err))
	}
	var attrs *storage.ObjectAttrs
	err = s.do(ctx, func(ctx context.Context) (err error) {
		attrs, err = obj.Attrs(ctx)
		return err
	})
	switch {
	case err == nil && attrs.Size > 0:
		return true, nil
	case err == nil:
		err = s.upload(ctx, obj.If(storage.Conditions{GenerationMatch: attrs.Generation}), blob)
	case errors.Is(err, storage.ErrObjectNotExist):
		err = s.upload(ctx, obj, blob)
	}
	if err != nil {
		return false, fmt.Errorf("chunk %s: %s: %w", d, s.objURL(key), mapErr(err))
	}
	return false, nil
}

// WriteFile uploads the content file rel, replacing any existing object.
func (s *Store) WriteFile(ctx context.Context, rel string, data []byte) error {
	key, err := s.keys.Content(rel)
	if err != nil {
		return err
	}
	if err := s.upload(ctx, s.bucket.Object(key), data); err != nil {
		return fmt.Errorf("%s: %w", s.objURL(key), mapErr(err))
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// upload writes data in one request (no resumable session, no extra
// buffer) under the bucket policy.
func (s *Store) upload(ctx context.Context, obj *storage.ObjectHandle, data []byte) error {
	sum := crc32.Checksum(data, castagnoli)
	return s.do(ctx, func(ctx context.Context) error {
		w := obj.NewWriter(ctx)
		w.ChunkSize = 0
		w.ContentType = "application/octet-stream"
		w.CRC32C, w.SendCRC32C = sum, true
		_, err := w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// Close releases the client's connections.
func (s *Store) Close() error { return s.client.Close() }

func status(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// mapErr wraps chunkstore.ErrNotFound around storage.ErrObjectNotExist
// only (the object is definitively not there), chunkstore.ErrUnavailable
// around storage.ErrBucketNotExist and other 404s (they prove nothing about
// the data), chunkstore.ErrDenied
// around 401/403s and chunkstore.ErrUnavailable around unreachable endpoints
// and transient failures that outlasted the retries. Any other error (a 400
// such as a requester-pays bucket's UserProjectMissing) is returned as is:
// it proves nothing about the data (chunkstore.Proven is false).
func mapErr(err error) error {
	switch st := status(err); {
	case errors.Is(err, storage.ErrBucketNotExist):
		return fmt.Errorf("%w: %w: the bucket does not exist (deleted? a wrong project or endpoint?): this proves nothing about the data", chunkstore.ErrUnavailable, err)
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%w: %v", chunkstore.ErrNotFound, err)
	case st == http.StatusNotFound:
		return fmt.Errorf("%w: %v: a 404 that names no missing object (a proxy in the way? a wrong endpoint?): this proves nothing about the data", chunkstore.ErrUnavailable, err)
	case st == http.StatusForbidden || st == http.StatusUnauthorized:
		return fmt.Errorf("%w: %v", chunkstore.ErrDenied, err)
	case bucket.Unreachable(err) || classifyErr(err) != bucket.Fatal:
		if errors.Is(err, chunkstore.ErrUnavailable) {
			return err // the request policy said so already
		}
		return fmt.Errorf("%w: %w", chunkstore.ErrUnavailable, err)
	}
	return err
}

// classifyErr judges a failed attempt for the bucket policy: Fatal for an
// empty or too large chunk object and what shouldRetry refuses, Throttle
// for 429 and rateLimitExceeded (also sent as 403), Transient otherwise.
func classifyErr(err error) bucket.Class {
	if errors.Is(err, chunkstore.ErrEmpty) || errors.Is(err, chunkstore.ErrTooLarge) {
		return bucket.Fatal
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		for _, e := range ge.Errors {
			if e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded" {
				return bucket.Throttle
			}
		}
	}
	if status(err) == http.StatusTooManyRequests {
		return bucket.Throttle
	}
	var se *bucket.StallError
	if errors.As(err, &se) || shouldRetry(err) {
		return bucket.Transient
	}
	return bucket.Fatal
}

// shouldRetry retries what storage.ShouldRetry does (408, 429, 5xx,
// resets, unexpected EOF) plus timeouts and 409, never 401/403/404/412.
func shouldRetry(err error) bool {
	if bucket.Unreachable(err) {
		return false
	}
	switch st := status(err); st {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusPreconditionFailed:
		return false
	case http.StatusConflict:
		return true
	}
	// Deadline errors are not excluded: net/http's response-header timeout
	// matches context.DeadlineExceeded too. A caller's expired context ends
	// the retry loop anyway.
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return storage.ShouldRetry(err)
}

// ClaimSnapshot creates the snapshot's claim marker with a DoesNotExist
// precondition; release deletes it (see chunkstore.SnapshotClaimer). A
// marker that exists fails the claim with chunkstore.ErrSnapshotBusy,
// unless it holds this claim's own content (a retried upload whose first
// attempt landed).
func (s *Store) ClaimSnapshot(ctx context.Context, snapDir string) (func() error, error) {
	key, err := s.keys.Content(path.Join(snapDir, chunkstore.ClaimMarker))
	if err != nil {
		return nil, err
	}
	mine := chunkstore.NewClaimMarker()
	obj := s.bucket.Object(key)
	release := func() error {
		if err := s.do(context.WithoutCancel(ctx), obj.Delete); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
			return fmt.Errorf("remove claim %s: %w", s.objURL(key), mapErr(err))
		}
		return nil
	}
	err = s.upload(ctx, obj.If(storage.Conditions{DoesNotExist: true}), mine)
	if err == nil {
		return release, nil
	}
	if status(err) != http.StatusPreconditionFailed {
		return nil, fmt.Errorf("claim %s: %w", s.objURL(key), mapErr(err))
	}
	var held []byte
	if r, err := obj.NewReader(ctx); err == nil {
		held, _ = io.ReadAll(io.LimitReader(r, 4096))
		r.Close()
	}
	if bytes.Equal(held, mine) {
		return release, nil
	}
	return nil, chunkstore.ClaimBusyError(snapDir, s.objURL(key), held)
}
