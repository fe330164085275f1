package gcsstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/gcsstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

var bucketSeq atomic.Int64

func newBucket(srv *testenv.GCSServer) string {
	name := fmt.Sprintf("bucket-%d", bucketSeq.Add(1))
	srv.Server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return name
}

func put(srv *testenv.GCSServer, bucket, key string, data []byte) {
	srv.Server.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: key},
		Content:     data,
	})
}

func testOptions(endpoint string) gcsstore.Options {
	return gcsstore.Options{
		Endpoint:    endpoint,
		NoAuth:      true,
		Policy:      bucket.Options{RetryFor: 300 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, IOTimeout: 10 * time.Second},
		Concurrency: 16,
	}
}

func open(t testing.TB, bucket, prefix string, opts gcsstore.Options) *gcsstore.Store {
	t.Helper()
	s, err := gcsstore.Open(context.Background(), bucket, prefix, opts)
	if err != nil {
		t.Fatalf("Open gs://%s/%s: %v", bucket, prefix, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := testenv.StartGCS(t)
	storetest.Run(t, storetest.Harness{
		Scheme:    "gs",
		NewBucket: func(t testing.TB) string { return newBucket(srv) },
		Open: func(t testing.TB, bucket, prefix string, create bool) chunkstore.WriteStore {
			o := testOptions(srv.URL)
			o.Create = create
			return open(t, bucket, prefix, o)
		},
		Put: func(t testing.TB, bucket, key string, data []byte) { put(srv, bucket, key, data) },
		OpenCounting: func(t testing.TB, bucket, prefix string) (chunkstore.Store, func() int) {
			p, err := faultproxy.Start("127.0.0.1:0", srv.URL, 0, faultproxy.Rule{Method: "GET", PathContains: "/b/" + bucket + "/o"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			o := testOptions(p.URL)
			o.ListPageSize = 100 // fake-gcs-server returns one page unless asked for less
			return open(t, bucket, prefix, o), func() int { return p.Matched()[0] }
		},
		Get: func(t testing.TB, bucket, key string) ([]byte, bool) {
			o, err := srv.Server.GetObject(bucket, key)
			if err != nil {
				return nil, false
			}
			return o.Content, true
		},
	})
}

type fixture struct {
	proxy  *faultproxy.Proxy
	bucket string
	digest [32]byte
	blob   []byte
	file   []byte
}

const fileRel = "vm/100/2026-11-29T10:00:00Z/drive-scsi0.img.fidx"

func newFixture(t *testing.T, srv *testenv.GCSServer) *fixture {
	f := &fixture{bucket: newBucket(srv)}
	f.digest, f.blob = storetest.Chunk(t, storetest.Noise(1<<20, 2))
	f.file = storetest.Noise(3<<20, 3)
	put(srv, f.bucket, "store/"+chunkstore.ChunkRelPath(f.digest), f.blob)
	put(srv, f.bucket, "store/.cnt/"+fileRel, f.file)
	p, err := faultproxy.Start("127.0.0.1:0", srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	f.proxy = p
	return f
}

func TestFaults(t *testing.T) {
	srv := testenv.StartGCS(t)
	type op func(t *testing.T, f *fixture, s *gcsstore.Store) error
	readChunk := func(t *testing.T, f *fixture, s *gcsstore.Store) error {
		got, err := s.ReadChunk(context.Background(), f.digest, nil, 0)
		if err == nil && !bytes.Equal(got, f.blob) {
			t.Fatalf("ReadChunk returned wrong bytes")
		}
		return err
	}
	readFile := func(t *testing.T, f *fixture, s *gcsstore.Store) error {
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
	list := func(t *testing.T, f *fixture, s *gcsstore.Store) error {
		fis, err := s.ListFiles(context.Background(), "vm")
		if err == nil && (len(fis) != 1 || fis[0].Path != fileRel) {
			t.Fatalf("ListFiles = %v", fis)
		}
		return err
	}
	writeChunk := func(t *testing.T, f *fixture, s *gcsstore.Store) error {
		d, blob := storetest.Chunk(t, []byte("new chunk "+t.Name()))
		existed, err := s.WriteChunk(context.Background(), d, blob)
		if err == nil && existed {
			t.Fatalf("new chunk reported as existing")
		}
		return err
	}
	const chunkGet, listGet, upload = ".chunks", "/storage/v1/b/", "/upload/"
	for _, tc := range []struct {
		name     string
		rule     faultproxy.Rule
		op       op
		wantErr  error
		wantMsg  string
		requests int
	}{
		{"read/503 twice", faultproxy.Rule{Method: "GET", PathContains: chunkGet, Times: 2, Status: 503}, readChunk, nil, "", 3},
		{"read/429", faultproxy.Rule{Method: "GET", PathContains: chunkGet, Times: 1, Status: 429}, readChunk, nil, "", 2},
		{"read/reset mid-body twice", faultproxy.Rule{Method: "GET", PathContains: chunkGet, Times: 2, Reset: true, ResetAfter: 1000}, readChunk, nil, "", 0},
		{"read/persistent 503", faultproxy.Rule{Method: "GET", PathContains: chunkGet, Status: 503}, readChunk, chunkstore.ErrUnavailable, "", 0},
		{"read/403 not retried", faultproxy.Rule{Method: "GET", PathContains: chunkGet, Status: 403}, readChunk, chunkstore.ErrDenied, "", 1},
		{"file/503", faultproxy.Rule{Method: "GET", PathContains: ".cnt", Times: 2, Status: 503}, readFile, nil, "", 3},
		{"file/reset mid-body", faultproxy.Rule{Method: "GET", PathContains: ".cnt", Times: 2, Reset: true, ResetAfter: 1 << 20}, readFile, nil, "", 0},
		{"list/503", faultproxy.Rule{Method: "GET", PathContains: listGet, Times: 2, Status: 503}, list, nil, "", 3},
		{"list/reset", faultproxy.Rule{Method: "GET", PathContains: listGet, Times: 1, Reset: true, ResetAfter: 20}, list, nil, "", 2},
		{"put/503", faultproxy.Rule{Method: "POST", PathContains: upload, Times: 2, Status: 503}, writeChunk, nil, "", 3},
		{"put/429", faultproxy.Rule{Method: "POST", PathContains: upload, Times: 1, Status: 429}, writeChunk, nil, "", 2},
		{"put/persistent 503", faultproxy.Rule{Method: "POST", PathContains: upload, Status: 503}, writeChunk, chunkstore.ErrUnavailable, "", 0},
		{"put/403", faultproxy.Rule{Method: "POST", PathContains: upload, Status: 403}, writeChunk, chunkstore.ErrDenied, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, srv)
			s := open(t, f.bucket, "store", testOptions(f.proxy.URL))
			f.proxy.SetRules(tc.rule)
			err := tc.op(t, f, s)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if n := strings.Count(err.Error(), tc.wantErr.Error()); n != 1 {
					t.Errorf("err = %v: says %q %d times, want once", err, tc.wantErr, n)
				}
			case tc.wantMsg != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), "gs://"+f.bucket+"/store/") {
					t.Fatalf("err = %v, want an error naming the object and mentioning %q", err, tc.wantMsg)
				}
			default:
				if err != nil {
					t.Fatalf("err = %v, want success after retries", err)
				}
			}
			if got := f.proxy.Matched()[0]; tc.requests > 0 && got != tc.requests {
				t.Errorf("%d requests matched the rule, want %d", got, tc.requests)
			}
			if tc.wantErr == nil && tc.wantMsg == "" && f.proxy.Faults() == 0 {
				t.Errorf("no fault was injected")
			}
		})
	}
}

func TestNotFoundNotRetried(t *testing.T) {
	srv := testenv.StartGCS(t)
	f := newFixture(t, srv)
	s := open(t, f.bucket, "store", testOptions(f.proxy.URL))
	f.proxy.SetRules(faultproxy.Rule{PathContains: crypto.Digest{1}.String()})
	_, err := s.ReadChunk(context.Background(), [32]byte{1}, nil, 0)
	if !errors.Is(err, chunkstore.ErrNotFound) || !strings.Contains(err.Error(), s.ChunkLocation([32]byte{1})) {
		t.Fatalf("err = %v", err)
	}
	if n := f.proxy.Matched()[0]; n != 1 {
		t.Errorf("404 was requested %d times, want 1", n)
	}
}

func TestMissingBucket(t *testing.T) {
	srv := testenv.StartGCS(t)
	_, err := gcsstore.Open(context.Background(), "no-such-bucket", "x", testOptions(srv.URL))
	if !errors.Is(err, chunkstore.ErrNotFound) || !strings.Contains(err.Error(), "gs://no-such-bucket/x") {
		t.Fatalf("err = %v, want ErrNotFound naming the bucket", err)
	}
}

func TestEmulatorHostWithoutCredentials(t *testing.T) {
	srv := testenv.StartGCS(t)
	f := newFixture(t, srv)
	t.Setenv("STORAGE_EMULATOR_HOST", srv.Host)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/credentials.json")
	s, err := gcsstore.OpenURL(context.Background(), "gs://"+f.bucket+"/store", gcsstore.Options{Policy: bucket.Options{RetryFor: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Layout() != gcsstore.LayoutPBS4 {
		t.Errorf("layout %v", s.Layout())
	}
	if got, err := s.ReadChunk(context.Background(), f.digest, nil, 0); err != nil || !bytes.Equal(got, f.blob) {
		t.Fatalf("ReadChunk: %v", err)
	}
}

// slowAttempt is how long TestRequestTimeout's slow attempt would take if
// it were not cut at the request timeout (200ms): far longer than the
// timeout, so the proxy sees it abandoned and a second attempt, however
// busy the machine.
const slowAttempt = 30 * time.Second

func TestRequestTimeout(t *testing.T) {
	srv := testenv.StartGCS(t)
	f := newFixture(t, srv)
	o := testOptions(f.proxy.URL)
	o.Policy.IOTimeout = 200 * time.Millisecond
	s := open(t, f.bucket, "store", o)
	f.proxy.SetRules(faultproxy.Rule{Method: "GET", PathContains: ".chunks", Times: 1, Delay: slowAttempt})
	abandoned := f.proxy.Abandoned()
	if got, err := s.ReadChunk(context.Background(), f.digest, nil, 0); err != nil || !bytes.Equal(got, f.blob) {
		t.Fatalf("ReadChunk: %v", err)
	}
	// Cut at the request timeout, the slow attempt is tried again: two
	// attempts, the first one slow. That it was cut during its delay, not
	// later by some other limit, the abandoned count shows.
	if m, a := f.proxy.Matched()[0], f.proxy.Acted()[0]; m != 2 || a != 1 {
		t.Errorf("%d attempts (%d slow), want 2 (1 slow): the slow attempt was not cut", m, a)
	}
	// The proxy notices the closed connection shortly after the client
	// closes it; had the client not closed it, the count would never come.
	// The wait ends well before slowAttempt: a guard against a hang, not a
	// measure.
	for deadline := time.Now().Add(slowAttempt / 2); f.proxy.Abandoned() <= abandoned && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := f.proxy.Abandoned() - abandoned; got != 1 {
		t.Errorf("%d requests abandoned at the proxy, want 1: the slow attempt was not cut at the request timeout", got)
	}
}
