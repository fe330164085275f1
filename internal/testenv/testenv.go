// Package testenv starts real object-storage servers on loopback for tests:
// versitygw (an S3 gateway) with its posix backend over a temporary
// directory, and fake-gcs-server's in-process fakestorage.
//
// versitygw is an external binary installed by scripts/install-test-servers.sh.
// When it is missing, tests using it are skipped, except when CI=true: then
// they fail, so CI never skips silently.
//
// Test support only: imported by tests and by the other packages under
// internal/, never by a non-test package outside internal/ (TestLayout in
// the module root's layout_test.go checks this).
package testenv

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"golang.org/x/sys/unix"
)

// VersityGWVersion is the versitygw release the install script installs.
const VersityGWVersion = "v1.8.0"

// S3 credentials and region of the servers StartS3 starts.
const (
	S3AccessKey = "pbsdirect-test"
	S3SecretKey = "pbsdirect-test-secret-key"
	S3Region    = "us-east-1"
)

// SkipOrFail skips the test with the message, or fails it when CI=true
// (CI must never skip silently); see fixture.SkipOrFail.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	fixture.SkipOrFail(t, "%s (run scripts/install-test-servers.sh)", fmt.Sprintf(format, args...))
}

// VersityGWPath finds the versitygw binary: $VERSITYGW, then $PATH, then
// $(go env GOPATH)/bin.
func VersityGWPath() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("versitygw: $VERSITYGW: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	for _, dir := range filepath.SplitList(build.Default.GOPATH) {
		p := filepath.Join(dir, "bin", "versitygw")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("versitygw not found in $VERSITYGW, $PATH or $(go env GOPATH)/bin")
}

// S3Server is a running versitygw serving the directory Root: every
// sub-directory of Root is a bucket, every file below it an object.
type S3Server struct {
	// Endpoint is the base URL, "http://127.0.0.1:PORT" (path-style).
	Endpoint string
	// Root is the served directory.
	Root string
	// AccessKey, SecretKey and Region are the root account's credentials.
	AccessKey, SecretKey, Region string
}

// Bucket creates the bucket name (a directory below Root) and returns its
// directory; files placed there are objects of the bucket.
func (s *S3Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// PutFile stores data as object key of bucket by writing the file directly
// below Root (fast, for test fixtures) and tagging it like versitygw does.
func (s *S3Server) PutFile(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	p := filepath.Join(s.Root, bucket, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tagETag(p, data); err != nil {
		t.Fatal(err)
	}
}

// AdoptFiles tags every file below Root that has no ETag yet. versitygw
// treats a file without its ETag attribute as absent for conditional
// requests (a PUT with "If-None-Match: *" would overwrite it), so call this
// after placing a datastore directory below Root by hand.
func (s *S3Server) AdoptFiles(t testing.TB) {
	t.Helper()
	err := filepath.WalkDir(s.Root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		if _, err := unix.Getxattr(p, etagXattr, nil); err == nil {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return tagETag(p, data)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// etagXattr is where versitygw's posix backend keeps an object's ETag.
const etagXattr = "user.etag"

func tagETag(p string, data []byte) error {
	sum := md5.Sum(data)
	if err := unix.Setxattr(p, etagXattr, []byte(hex.EncodeToString(sum[:])), 0); err != nil {
		return fmt.Errorf("tagging %s for versitygw (needs a filesystem with user xattrs): %w", p, err)
	}
	return nil
}

// StartS3 starts versitygw's posix backend on a free loopback port over a
// new temporary directory, waits until it answers, and stops it when the
// test ends. It skips (or, with CI set, fails) the test when versitygw is
// not installed.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	return StartS3Dir(t, t.TempDir())
}

// StartS3Dir is StartS3 serving the existing directory root, e.g. a
// directory holding a datastore directory that is then served as a bucket.
func StartS3Dir(t testing.TB, root string) *S3Server {
	t.Helper()
	return StartS3Creds(t, root, S3AccessKey, S3SecretKey)
}

// StartS3Creds is StartS3Dir with a root account of its own (access key
// id and secret key), for tests of several servers that each take other
// credentials.
func StartS3Creds(t testing.TB, root, accessKey, secretKey string) *S3Server {
	t.Helper()
	bin, err := VersityGWPath()
	if err != nil {
		SkipOrFail(t, "%v", err)
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		s, err := startVersity(t, bin, root, accessKey, secretKey)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("starting versitygw: %v", lastErr)
	return nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// lockedBuffer collects a child's output safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startVersity(t testing.TB, bin, root, accessKey, secretKey string) (*S3Server, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--port", addr,
		"--access", accessKey,
		"--secret", secretKey,
		"--region", S3Region,
		"--quiet",
		"posix",
		// Files placed in root by hand have no stored ETag; give them
		// one, as real servers do (conditional requests need it).
		"--default-etag", "00000000000000000000000000000000",
		root)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	endpoint := "http://" + addr
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("versitygw exited before answering (%v): %s", err, out.String())
		default:
		}
		if resp, err := hc.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
			break // any HTTP answer (403 for an unsigned request) means ready
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("versitygw did not answer on %s within 20s: %s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("versitygw output:\n%s", out.String())
		}
	})
	return &S3Server{Endpoint: endpoint, Root: root, AccessKey: accessKey, SecretKey: secretKey, Region: S3Region}, nil
}

// GCSServer is a running in-process fake-gcs-server.
type GCSServer struct {
	// Server is the fakestorage server (for creating buckets and objects
	// directly).
	Server *fakestorage.Server
	// URL is the base URL, "http://127.0.0.1:PORT"; the JSON API is below
	// URL+"/storage/v1/", XML-API downloads are served at URL+"/bucket/object".
	URL string
	// Host is "127.0.0.1:PORT", the value for STORAGE_EMULATOR_HOST.
	Host string
}

// StartGCS starts fakestorage over HTTP on a free loopback port, with its
// public host set to 127.0.0.1 (any port) so that XML-API reads work also
// through a proxy, creates the given buckets and stops the server when the
// test ends.
func StartGCS(t testing.TB, buckets ...string) *GCSServer {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:     "http",
		Host:       "127.0.0.1",
		Port:       0,
		PublicHost: "127.0.0.1",
		Writer:     discard{},
	})
	if err != nil {
		t.Fatalf("starting fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	u := srv.URL()
	host := u[len("http://"):]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/_internal/healthcheck", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("fake-gcs-server health check: %v", err)
	}
	resp.Body.Close()
	return &GCSServer{Server: srv, URL: u, Host: host}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
