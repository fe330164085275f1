package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/internal/tlsproxy"
)

// TestBucketTLSTrustFromEnv restores from S3 (versitygw) behind an HTTPS
// endpoint with a self-signed certificate (tlsproxy) trusted only through
// the environment: AWS_CA_BUNDLE and SSL_CERT_FILE, with the endpoint given
// by --s3-endpoint or AWS_ENDPOINT_URL_S3, restore byte-exact. A trust
// setting that cannot be used (a missing file, one without a certificate)
// is a configuration error: exit 3 at once, naming the variable and the
// file, without retrying (the run is given a minute, where retrying would
// take ten).
func TestBucketTLSTrustFromEnv(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(29, fixture.Region{Kind: fixture.Random, Len: 1 << 20})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	local := fixture.NewStore(t)
	mustOK(t, "backup", "--store", local, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str,
		"--chunk-size", "64", "drive-scsi0.img:"+img)
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "trust", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "")
	p, err := tlsproxy.Start(tlsproxy.Options{Target: s3.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	missing := filepath.Join(dir, "nonexist.pem")
	// A system bundle, as many hosts name in SSL_CERT_FILE: it does not
	// hold the endpoint's certificate.
	system := filepath.Join(dir, "system", "bundle.pem")
	if err := os.MkdirAll(filepath.Dir(system), 0o755); err != nil {
		t.Fatal(err)
	}
	other, err := tlsproxy.Start(tlsproxy.Options{Target: s3.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := os.WriteFile(system, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cert, p.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		env      map[string]string
		endpoint bool     // --s3-endpoint, else AWS_ENDPOINT_URL_S3
		want     []string // "": success; else exit 3 with these on stderr
	}{
		{"ca-bundle/flag", map[string]string{"AWS_CA_BUNDLE": cert}, true, nil},
		{"ca-bundle/env", map[string]string{"AWS_CA_BUNDLE": cert}, false, nil},
		{"ca-bundle/with-system-ssl-env", map[string]string{"AWS_CA_BUNDLE": cert, "SSL_CERT_FILE": system, "SSL_CERT_DIR": filepath.Dir(system)}, false, nil},
		{"ssl-cert-file/flag", map[string]string{"SSL_CERT_FILE": cert}, true, nil},
		{"ssl-cert-file/missing", map[string]string{"SSL_CERT_FILE": missing}, true, []string{"SSL_CERT_FILE", missing}},
		{"ssl-cert-file/garbage", map[string]string{"SSL_CERT_FILE": garbage}, true, []string{"SSL_CERT_FILE", garbage}},
		{"ca-bundle/missing", map[string]string{"AWS_CA_BUNDLE": missing}, false, []string{"AWS_CA_BUNDLE", missing}},
		{"ca-bundle/garbage", map[string]string{"AWS_CA_BUNDLE": garbage}, true, []string{"AWS_CA_BUNDLE", garbage}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"AWS_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
				t.Setenv(k, c.env[k])
			}
			args := []string{"restore", "--store", "s3://trust/ds"}
			if c.endpoint {
				args = append(args, "--s3-endpoint", p.URL)
			} else {
				t.Setenv("AWS_ENDPOINT_URL_S3", p.URL)
			}
			target := filepath.Join(t.TempDir(), "r.raw")
			args = append(args, "vm/100", "drive-scsi0", target)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out, errb bytes.Buffer
			code := run(ctx, args, &out, &errb)
			if c.want == nil {
				if code != 0 {
					t.Fatalf("exit %d, want 0:\n%s%s", code, out.String(), errb.String())
				}
				fixture.Equal(t, target, data)
				return
			}
			if code != 3 {
				t.Fatalf("exit %d, want 3:\n%s%s", code, out.String(), errb.String())
			}
			for _, w := range c.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			if strings.Contains(errb.String(), "retrying") {
				t.Errorf("a trust configuration error was retried:\n%s", errb.String())
			}
		})
	}
}
