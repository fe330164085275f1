package tlsproxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
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
		})
	}
}

// discardConn is a net.Conn whose writes all succeed.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error) { return len(b), nil }

// TestPacedConn: on a clock the test controls, a capped connection waits
// for what it sends at its rate (less the credit an idle connection saves
// up), in slices, and an uncapped one never waits.
func TestPacedConn(t *testing.T) {
	for _, c := range []struct {
		name  string
		rate  int64
		bytes int
		want  time.Duration
	}{
		{"uncapped", 0, 4 << 20, 0},
		{"4 MiB at 4 MiB/s", 4 << 20, 4 << 20, time.Second - maxCredit - time.Second*paceSlice/(4<<20)},
		{"1 MiB at 1 MiB/s", 1 << 20, 1 << 20, time.Second - maxCredit - time.Second*paceSlice/(1<<20)},
		{"one slice", 1 << 20, paceSlice, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			var slept time.Duration
			pc := &pacedConn{Conn: discardConn{}, rate: c.rate,
				now:   func() time.Time { return now },
				sleep: func(d time.Duration) { slept += d; now = now.Add(d) }}
			n, err := pc.Write(make([]byte, c.bytes))
			if err != nil || n != c.bytes {
				t.Fatalf("wrote %d of %d: %v", n, c.bytes, err)
			}
			if slept != c.want {
				t.Errorf("waited %v for %d bytes at %d B/s, want %v", slept, c.bytes, c.rate, c.want)
			}
		})
	}
}
