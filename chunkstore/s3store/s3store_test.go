package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

var bucketSeq atomic.Int64

func newBucket(t testing.TB, srv *testenv.S3Server) string {
	name := fmt.Sprintf("bucket-%d", bucketSeq.Add(1))
	srv.Bucket(t, name)
	return name
}

// testOptions keeps retries fast.
func testOptions(srv *testenv.S3Server, endpoint string) s3store.Options {
	return s3store.Options{
		Endpoint:    endpoint,
		Region:      srv.Region,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		Policy:      bucket.Options{RetryFor: 300 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, IOTimeout: 10 * time.Second},
		Concurrency: 16,
	}
}

func open(t testing.TB, bucket, prefix string, opts s3store.Options) *s3store.Store {
	t.Helper()
	s, err := s3store.Open(context.Background(), bucket, prefix, opts)
	if err != nil {
		t.Fatalf("Open s3://%s/%s: %v", bucket, prefix, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := testenv.StartS3(t)
	storetest.Run(t, storetest.Harness{
		Scheme:    "s3",
		NewBucket: func(t testing.TB) string { return newBucket(t, srv) },
		Open: func(t testing.TB, bucket, prefix string, create bool) chunkstore.WriteStore {
			o := testOptions(srv, srv.Endpoint)
			o.Create = create
			return open(t, bucket, prefix, o)
		},
		Put: srv.PutFile,
		OpenCounting: func(t testing.TB, bucket, prefix string) (chunkstore.Store, func() int) {
			p, err := faultproxy.Start("127.0.0.1:0", srv.Endpoint, 0, faultproxy.Rule{Method: "GET", QueryContains: "list-type=2"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			o := testOptions(srv, p.URL)
			o.ListPageSize = 100
			return open(t, bucket, prefix, o), func() int { return p.Matched()[0] }
		},
		Get: func(t testing.TB, bucket, key string) ([]byte, bool) {
			b, err := os.ReadFile(filepath.Join(srv.Root, bucket, filepath.FromSlash(key)))
			return b, err == nil
		},
	})
}

// fixture is a bucket holding one chunk and one content file (PBS4 layout),
// served through a fault proxy.
type fixture struct {
	srv    *testenv.S3Server
	proxy  *faultproxy.Proxy
	bucket string
	digest [32]byte
	blob   []byte
	file   []byte
}

const fileRel = "vm/100/2026-11-29T10:00:00Z/drive-scsi0.img.fidx"

func newFixture(t *testing.T, srv *testenv.S3Server) *fixture {
	f := &fixture{srv: srv, bucket: newBucket(t, srv)}
	d, blob := storetest.Chunk(t, storetest.Noise(1<<20, 1)) // ~1 MiB blob
	f.digest, f.blob = d, blob
	f.file = make([]byte, 3<<20)
	for i := range f.file {
		f.file[i] = byte(i * 7 / 3)
	}
	srv.PutFile(t, f.bucket, "store/"+chunkstore.ChunkRelPath(d), blob)
	srv.PutFile(t, f.bucket, "store/.cnt/"+fileRel, f.file)
	p, err := faultproxy.Start("127.0.0.1:0", srv.Endpoint, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	f.proxy = p
	return f
}

func (f *fixture) open(t *testing.T) *s3store.Store {
	return open(t, f.bucket, "store", testOptions(f.srv, f.proxy.URL))
}

func TestFaults(t *testing.T) {
	srv := testenv.StartS3(t)
	chunkPath := "/.chunks/"
	type check func(t *testing.T, f *fixture, s *s3store.Store) error
	readChunk := func(t *testing.T, f *fixture, s *s3store.Store) error {
		got, err := s.ReadChunk(context.Background(), f.digest, nil, 0)
		if err == nil && !bytes.Equal(got, f.blob) {
			t.Fatalf("ReadChunk returned wrong bytes (%d, want %d)", len(got), len(f.blob))
		}
		return err
	}
	readFile := func(t *testing.T, f *fixture, s *s3store.Store) error {
		r, size, err := s.OpenFile(context.Background(), fileRel)
		if err != nil {
			return err
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err == nil && (!bytes.Equal(got, f.file) || size != int64(len(f.file))) {
			t.Fatalf("OpenFile returned wrong bytes (%d, want %d)", len(got), len(f.file))
		}
		return err
	}
	list := func(t *testing.T, f *fixture, s *s3store.Store) error {
		fis, err := s.ListFiles(context.Background(), "vm")
		if err == nil && (len(fis) != 1 || fis[0].Path != fileRel) {
			t.Fatalf("ListFiles = %v", fis)
		}
		return err
	}
	writeChunk := func(t *testing.T, f *fixture, s *s3store.Store) error {
		d, blob := storetest.Chunk(t, []byte("new chunk "+t.Name()))
		existed, err := s.WriteChunk(context.Background(), d, blob)
		if err == nil && existed {
			t.Fatalf("new chunk reported as existing")
		}
		return err
	}
	writeFile := func(t *testing.T, f *fixture, s *s3store.Store) error {
		return s.WriteFile(context.Background(), "vm/100/owner", []byte("root@pam\n"))
	}
	for _, tc := range []struct {
		name     string
		rule     faultproxy.Rule
		op       check
		wantErr  error  // nil: success expected
		wantMsg  string // substring of the error
		requests int    // requests matching the rule (0: don't check)
	}{
		{"read/503 twice", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Times: 2, Status: 503}, readChunk, nil, "", 3},
		{"read/429 twice", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Times: 2, Status: 429}, readChunk, nil, "", 3},
		{"read/500", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Times: 1, Status: 500}, readChunk, nil, "", 2},
		{"read/reset mid-body twice", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Times: 2, Reset: true, ResetAfter: 1000}, readChunk, nil, "", 3},
		{"read/reset before body", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Times: 1, Reset: true}, readChunk, nil, "", 2},
		{"read/persistent 503", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Status: 503}, readChunk, chunkstore.ErrUnavailable, "", 0},
		{"read/persistent reset", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Reset: true, ResetAfter: 10}, readChunk, chunkstore.ErrUnavailable, "", 0},
		{"read/403 not retried", faultproxy.Rule{Method: "GET", PathContains: chunkPath, Status: 403}, readChunk, chunkstore.ErrDenied, "", 1},
		{"file/503", faultproxy.Rule{Method: "GET", PathContains: "/.cnt/", Times: 2, Status: 503}, readFile, nil, "", 3},
		{"file/reset mid-body resumes", faultproxy.Rule{Method: "GET", PathContains: "/.cnt/", Times: 2, Reset: true, ResetAfter: 1 << 20}, readFile, nil, "", 3},
		{"list/503", faultproxy.Rule{Method: "GET", QueryContains: "list-type=2", Times: 2, Status: 503}, list, nil, "", 3},
		{"list/reset", faultproxy.Rule{Method: "GET", QueryContains: "list-type=2", Times: 1, Reset: true, ResetAfter: 50}, list, nil, "", 2},
		{"putchunk/503", faultproxy.Rule{Method: "PUT", Times: 2, Status: 503}, writeChunk, nil, "", 3},
		{"putchunk/409 conflict", faultproxy.Rule{Method: "PUT", Times: 1, Status: 409}, writeChunk, nil, "", 2},
		{"putchunk/429", faultproxy.Rule{Method: "PUT", Times: 1, Status: 429}, writeChunk, nil, "", 2},
		{"putfile/503", faultproxy.Rule{Method: "PUT", Times: 3, Status: 503}, writeFile, nil, "", 4},
		{"putfile/persistent 503", faultproxy.Rule{Method: "PUT", Status: 503}, writeFile, chunkstore.ErrUnavailable, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, srv)
			s := f.open(t) // layout detection happens before the rules apply
			f.proxy.SetRules(tc.rule)
			before := s.Retries()
			err := tc.op(t, f, s)
			persistent := tc.wantMsg != ""
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if n := strings.Count(err.Error(), tc.wantErr.Error()); n != 1 {
					t.Errorf("err = %v: says %q %d times, want once", err, tc.wantErr, n)
				}
			case persistent:
				if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("err = %v, want an error mentioning %q", err, tc.wantMsg)
				}
				if !strings.Contains(err.Error(), "s3://"+f.bucket+"/store/") {
					t.Errorf("error does not name the object: %v", err)
				}
			default:
				if err != nil {
					t.Fatalf("err = %v, want success after retries", err)
				}
			}
			if got := f.proxy.Matched()[0]; tc.requests > 0 && got != tc.requests {
				t.Errorf("%d requests matched the rule, want %d", got, tc.requests)
			}
			if tc.wantErr == nil && s.Retries() == before {
				t.Errorf("Retries() did not count the retries")
			}
		})
	}
}

func TestNotFoundNotRetried(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	s := f.open(t)
	f.proxy.SetRules(faultproxy.Rule{PathContains: chunkstore.ChunkRelPath([32]byte{1})})
	_, err := s.ReadChunk(context.Background(), [32]byte{1}, nil, 0)
	if !errors.Is(err, chunkstore.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if n := f.proxy.Matched()[0]; n != 1 {
		t.Errorf("404 was requested %d times, want 1", n)
	}
}

func TestWrongSecretDenied(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	o := testOptions(srv, f.proxy.URL)
	o.Credentials = credentials.NewStaticCredentialsProvider(srv.AccessKey, "wrong-secret", "")
	_, err := s3store.Open(context.Background(), f.bucket, "store", o)
	if !errors.Is(err, chunkstore.ErrDenied) {
		t.Fatalf("Open with a wrong secret: err = %v, want ErrDenied", err)
	}
	if n := f.proxy.Requests(); n != 1 {
		t.Errorf("denied request was sent %d times, want 1", n)
	}
}

func TestMissingBucket(t *testing.T) {
	srv := testenv.StartS3(t)
	_, err := s3store.Open(context.Background(), "no-such-bucket", "", testOptions(srv, srv.Endpoint))
	if !errors.Is(err, chunkstore.ErrNotFound) || !strings.Contains(err.Error(), "s3://no-such-bucket") {
		t.Fatalf("err = %v, want ErrNotFound naming the bucket", err)
	}
}

func TestConditionalPutFallback(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	s := f.open(t)
	f.proxy.SetRules(faultproxy.Rule{Method: "PUT", Header: "If-None-Match", Status: 501})
	ctx := context.Background()
	d, blob := storetest.Chunk(t, []byte("fallback"))
	for i, want := range []bool{false, true, true} {
		existed, err := s.WriteChunk(ctx, d, blob)
		if err != nil || existed != want {
			t.Fatalf("WriteChunk #%d: existed=%v err=%v, want existed=%v", i, existed, err, want)
		}
	}
	if n := f.proxy.Matched()[0]; n != 1 {
		t.Errorf("conditional PUT sent %d times, want once before falling back", n)
	}
	if got, err := s.ReadChunk(ctx, d, nil, 0); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("read back: %v", err)
	}
}

// slowAttempt is how long TestRequestTimeout's slow attempt would take if
// it were not cut at the request timeout (200ms): far longer than the
// timeout, so the proxy sees it abandoned and a second attempt, however
// busy the machine.
const slowAttempt = 30 * time.Second

func TestRequestTimeout(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	o := testOptions(srv, f.proxy.URL)
	o.Policy.IOTimeout = 200 * time.Millisecond
	s := open(t, f.bucket, "store", o)
	for _, tc := range []struct {
		name string
		rule faultproxy.Rule
		op   func() error
	}{
		{"get", faultproxy.Rule{Method: "GET", PathContains: "/.chunks/", Times: 1, Delay: slowAttempt}, func() error {
			_, err := s.ReadChunk(context.Background(), f.digest, nil, 0)
			return err
		}},
		{"list", faultproxy.Rule{Method: "GET", QueryContains: "list-type=2", Times: 1, Delay: slowAttempt}, func() error {
			_, err := s.ListFiles(context.Background(), "vm")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.proxy.SetRules(tc.rule)
			abandoned := f.proxy.Abandoned()
			if err := tc.op(); err != nil {
				t.Fatalf("err = %v", err)
			}
			// Cut at the request timeout, the slow attempt is tried again:
			// two attempts, the first one slow. That it was cut during its
			// delay, not later by some other limit, the abandoned count shows.
			if m, a := f.proxy.Matched()[0], f.proxy.Acted()[0]; m != 2 || a != 1 {
				t.Errorf("%d attempts (%d slow), want 2 (1 slow): the slow attempt was not cut", m, a)
			}
			waitAbandoned(t, f.proxy, abandoned+1)
		})
	}
}

// waitAbandoned waits until p counts want abandoned requests: the proxy
// notices a closed connection shortly after the client closes it. Had the
// client not closed it, the count would never come: the wait ends well
// before slowAttempt, a guard against a hang rather than a measure.
func waitAbandoned(t *testing.T, p *faultproxy.Proxy, want int64) {
	t.Helper()
	for deadline := time.Now().Add(slowAttempt / 2); p.Abandoned() < want && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := p.Abandoned(); got != want {
		t.Errorf("%d requests abandoned at the proxy, want %d: the slow attempt was not cut at the request timeout", got, want)
	}
}

func TestConcurrencyWithLatency(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	// Each request waits latency at the proxy, so concurrent ones overlap.
	const latency = 100 * time.Millisecond
	p, err := faultproxy.Start("127.0.0.1:0", srv.Endpoint, latency)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	o := testOptions(srv, p.URL)
	o.Concurrency = 32
	s := open(t, f.bucket, "store", o)
	const reads = 64
	var wg sync.WaitGroup
	errs := make(chan error, reads)
	sem := make(chan struct{}, o.Concurrency)
	for range reads {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := s.ReadChunk(context.Background(), f.digest, nil, 0); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Each request is held latency at the proxy: requests sent together
	// overlap there, serial ones never do. The count, not the time taken,
	// tells them apart on a busy machine; with 32 callers at once, even a
	// slow one gets far more than 8 in flight together.
	peak := p.PeakInFlight()
	t.Logf("%d reads of %d bytes at %v latency, %d callers: at most %d in flight", reads, len(f.blob), latency, o.Concurrency, peak)
	if peak < 8 {
		t.Errorf("at most %d requests in flight at once with %d callers: requests did not run concurrently", peak, o.Concurrency)
	}
}

func TestEnvironmentConfig(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	// The SDK's own environment variables work when no option overrides them.
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_REGION", srv.Region)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := s3store.OpenURL(context.Background(), "s3://"+f.bucket+"/store/", s3store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Endpoint() != srv.Endpoint || s.Layout() != s3store.LayoutPBS4 || s.String() != "s3://"+f.bucket+"/store" {
		t.Fatalf("endpoint %q layout %v name %q", s.Endpoint(), s.Layout(), s)
	}
	if got, err := s.ReadChunk(context.Background(), f.digest, nil, 0); err != nil || !bytes.Equal(got, f.blob) {
		t.Fatalf("ReadChunk via env config: %v", err)
	}
	// A flag (option) overrides the environment.
	o := s3store.Options{Endpoint: f.proxy.URL}
	s2 := open(t, f.bucket, "store", o)
	if s2.Endpoint() != f.proxy.URL {
		t.Fatalf("endpoint %q", s2.Endpoint())
	}
	before := f.proxy.Requests()
	if _, err := s2.ReadChunk(context.Background(), f.digest, nil, 0); err != nil || f.proxy.Requests() == before {
		t.Fatalf("option endpoint not used: %v", err)
	}
}

func TestForcedLayout(t *testing.T) {
	srv := testenv.StartS3(t)
	b := newBucket(t, srv)
	o := testOptions(srv, srv.Endpoint)
	o.Create, o.Layout = true, s3store.LayoutPlain
	s := open(t, b, "x", o)
	if s.Layout() != s3store.LayoutPlain {
		t.Fatalf("layout %v", s.Layout())
	}
	if err := s.WriteFile(context.Background(), "vm/1/owner", []byte("a\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv.Root, b, "x", "vm", "1", "owner")); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkReadChunk reads one 4 MiB (incompressible) chunk from versitygw
// on loopback with 32 reads in flight, directly and through a proxy adding
// 20 ms per request.
func BenchmarkReadChunk(b *testing.B) {
	srv := testenv.StartS3(b)
	bucket := newBucket(b, srv)
	d, blob := storetest.Chunk(b, storetest.Noise(4<<20, 9))
	srv.PutFile(b, bucket, "store/"+chunkstore.ChunkRelPath(d), blob)
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", latency), func(b *testing.B) {
			p, err := faultproxy.Start("127.0.0.1:0", srv.Endpoint, latency)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			o := testOptions(srv, p.URL)
			o.Concurrency = 32
			s := open(b, bucket, "store", o)
			b.SetBytes(int64(len(blob)))
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 0, len(blob))
				for pb.Next() {
					var err error
					if buf, err = s.ReadChunk(context.Background(), d, buf, 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
