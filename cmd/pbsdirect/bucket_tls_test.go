package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/internal/tlsproxy"
)

// TestBucketTLSConnections restores and verifies from S3 (versitygw) and
// GCS (fake-gcs-server) behind an HTTPS endpoint that offers HTTP/2 by ALPN
// (tlsproxy, a self-signed certificate made for the test), trusted by
// --s3-fingerprint (S3) and SSL_CERT_FILE (GCS). Every restore is
// byte-exact. With the default --bucket-http (and with 1.1) every fetch in
// flight has a connection of its own: the endpoint accepts at least as many
// connections as there are fetchers and at most bucket.MaxConns of them,
// and the JSON summary counts the same; --bucket-http 2 multiplexes the
// fetches on one HTTP/2 connection. verify through the endpoint counts its
// connections in its JSON and text reports. Each request waits 100 ms at
// the endpoint, so that the fetchers' requests overlap.
func TestBucketTLSConnections(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(23,
		fixture.Region{Kind: fixture.Random, Len: 4 << 20},
		fixture.Region{Kind: fixture.Zero, Len: 512 << 10},
		fixture.Region{Kind: fixture.Text, Len: 1 << 20})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	local := fixture.NewStore(t)
	mustOK(t, "backup", "--store", local, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str,
		"--chunk-size", "64", "drive-scsi0.img:"+img)
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "tlsbkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	gcs := testenv.StartGCS(t, "gtls")
	bktUploadGCS(t, gcs.Server, "gtls", "ds", local)
	bktSetEnv(t, gcs.Host)

	type place struct {
		name, store, target string
	}
	places := []place{{"s3", "s3://tlsbkt/ds", s3.Endpoint}, {"gcs", "gs://gtls/ds", gcs.URL}}
	cases := []struct {
		http string // --bucket-http; "" for the default
		h2   bool   // the fetches multiplexed on one HTTP/2 connection
	}{{"", false}, {"1.1", false}, {"2", true}}
	for _, pl := range places {
		for _, c := range cases {
			name := pl.name + "/default"
			if c.http != "" {
				name = pl.name + "/" + c.http
			}
			t.Run(name, func(t *testing.T) {
				p, err := tlsproxy.Start(tlsproxy.Options{Target: pl.target, Latency: 100 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				var flags []string
				if pl.name == "s3" {
					flags = []string{"--s3-endpoint", p.URL, "--s3-fingerprint", p.Fingerprint}
				} else {
					cert := filepath.Join(t.TempDir(), "cert.pem")
					if err := os.WriteFile(cert, p.CertPEM, 0o644); err != nil {
						t.Fatal(err)
					}
					t.Setenv("SSL_CERT_FILE", cert)
					t.Setenv("STORAGE_EMULATOR_HOST", p.URL)
				}
				if c.http != "" {
					flags = append(flags, "--bucket-http", c.http)
				}
				target := filepath.Join(t.TempDir(), "r.raw")
				s := restoreJSON(t, append(append([]string{"--store", pl.store}, flags...), "vm/100", "drive-scsi0", target)...)
				fixture.Equal(t, target, data)
				h1, h2 := p.Requests()
				if s.Requests == nil {
					t.Fatalf("summary without bucket-requests: %+v", s)
				}
				got := s.Requests.Connections
				t.Logf("%d fetchers, %d chunks: endpoint accepted %d connections (peak %d), %d HTTP/1.1 and %d HTTP/2 requests; summary %+v",
					s.Fetchers, s.ChunksFetched, p.Accepted(), p.PeakOpen(), h1, h2, got)
				if got.Opened != p.Accepted() {
					t.Errorf("summary counts %d connections opened, the endpoint accepted %d", got.Opened, p.Accepted())
				}
				if c.h2 {
					if p.Accepted() > 2 || h1 != 0 || h2 == 0 {
						t.Errorf("--bucket-http 2: %d connections, %d HTTP/1.1 and %d HTTP/2 requests; want the requests multiplexed on one HTTP/2 connection", p.Accepted(), h1, h2)
					}
					return
				}
				if h2 != 0 || h1 == 0 {
					t.Errorf("%d HTTP/2 and %d HTTP/1.1 requests: want HTTP/1.1 only", h2, h1)
				}
				if n, lim := p.Accepted(), int64(bucket.MaxConns(s.Fetchers)); n < int64(s.Fetchers) || n > lim || p.PeakOpen() < int64(s.Fetchers) {
					t.Errorf("%d connections (peak %d) for %d fetchers: want at least one per fetcher, at most %d", n, p.PeakOpen(), s.Fetchers, lim)
				}
				if got.Reused == 0 || got.PeakOpen < int64(s.Fetchers) {
					t.Errorf("summary: %+v: want connections reused and at least %d open at once", got, s.Fetchers)
				}
				if c.http != "" {
					return
				}
				// verify through the same endpoint counts its connections
				// in its report.
				code, rep := bktVerify(t, append([]string{"--store", pl.store}, flags...)...)
				if code != 0 || rep.Requests == nil || rep.Requests.Connections.Opened == 0 {
					t.Errorf("verify: exit %d, bucket-requests %+v", code, rep.Requests)
				}
				// The text report says it too.
				if r := mustOK(t, append([]string{"verify", "--store", pl.store}, flags...)...); !strings.Contains(r.out, "bucket connections: ") {
					t.Errorf("verify's text report counts no connections:\n%s", r.out)
				}
			})
		}
	}
}
