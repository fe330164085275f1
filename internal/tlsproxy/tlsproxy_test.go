package tlsproxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestProxy: requests reach the target with their Host header, over HTTP/2
// when offered (one connection for several requests) and HTTP/1.1 when
// not; the client trusts the certificate; a capped connection sends no
// faster than its cap.
func TestProxy(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
	var mu sync.Mutex
	var hosts []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		w.Write(body)
	}))
	defer target.Close()
	for _, c := range []struct {
		name  string
		opts  Options
		proto int
	}{
		{"h2", Options{}, 2},
		{"http1.1", Options{NoHTTP2: true}, 1},
		{"capped", Options{ConnBytesPerSecond: 4 << 20}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Target = target.URL
			p, err := Start(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(p.CertPEM) {
				t.Fatal("no certificate in CertPEM")
			}
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
			defer tr.CloseIdleConnections()
			mu.Lock()
			hosts = nil
			mu.Unlock()
			start := time.Now()
			for range 2 {
				resp, err := (&http.Client{Transport: tr}).Get(p.URL + "/x")
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(got, body) || resp.ProtoMajor != c.proto {
					t.Fatalf("%s: %d bytes, %v", resp.Proto, len(got), err)
				}
			}
			took := time.Since(start)
			h1, h2 := p.Requests()
			if p.Accepted() != 1 || p.PeakOpen() != 1 || h1+h2 != 2 || (c.proto == 2) != (h2 == 2) {
				t.Errorf("%d connections (peak %d), %d HTTP/1.1 and %d HTTP/2 requests; want 1 connection, 2 requests over HTTP/%d",
					p.Accepted(), p.PeakOpen(), h1, h2, c.proto)
			}
			mu.Lock()
			if len(hosts) != 2 || hosts[0] != p.Host {
				t.Errorf("target saw Host %q, want %q", hosts, p.Host)
			}
			mu.Unlock()
			// 4 MiB at 4 MiB/s, less the 50 ms a connection may save up.
			if c.opts.ConnBytesPerSecond > 0 && took < 900*time.Millisecond {
				t.Errorf("4 MiB through a 4 MiB/s connection took %v", took)
			}
		})
	}
}
