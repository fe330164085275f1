package bucket

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestParseHTTPVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want HTTPVersion
		bad  bool
	}{
		{"", HTTPAuto, false}, {"auto", HTTPAuto, false}, {"1.1", HTTP1, false}, {"2", HTTP2, false},
		{"3", HTTPAuto, true}, {"1.0", HTTPAuto, true},
		// Only the documented spellings.
		{"HTTP/1.1", HTTPAuto, true}, {"h2", HTTPAuto, true}, {"HTTP/2", HTTPAuto, true}, {"1", HTTPAuto, true},
		{"AUTO", HTTPAuto, true}, {" 2", HTTPAuto, true}, {"http2", HTTPAuto, true},
	} {
		got, err := ParseHTTPVersion(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseHTTPVersion(%q) = %v, %v", c.in, got, err)
		}
		if err == nil && c.in != "" {
			if back, _ := ParseHTTPVersion(got.String()); back != got {
				t.Errorf("%v does not parse back", got)
			}
		}
	}
}

// TestConfigureTransportConnections sends n requests at once to a TLS
// server that offers HTTP/2 and answers only when all have arrived: over
// HTTP/1.1 (the default) each has a connection of its own, even with "h2"
// left in a cloned TLS configuration's ALPN list; over HTTP/2 they share
// one. The counter counts the dials, and the reuse of a second round.
func TestConfigureTransportConnections(t *testing.T) {
	const n = 6
	for _, c := range []struct {
		v         HTTPVersion
		wantConns int64
		wantProto int
	}{{HTTPAuto, n, 1}, {HTTP1, n, 1}, {HTTP2, 1, 2}} {
		t.Run(c.v.String(), func(t *testing.T) {
			var arrived sync.WaitGroup
			arrived.Add(n)
			all := make(chan struct{})
			go func() { arrived.Wait(); close(all) }()
			var round sync.Mutex
			first := true
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				round.Lock()
				f := first
				round.Unlock()
				if f {
					arrived.Done()
					<-all
				}
				io.WriteString(w, "ok")
			}))
			srv.EnableHTTP2 = true
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			defer srv.Close()
			tr := http.DefaultTransport.(*http.Transport).Clone()
			pool := x509.NewCertPool()
			pool.AddCert(srv.Certificate())
			// As a clone of a transport that has spoken HTTP/2 carries.
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}}
			var cc ConnCounter
			ConfigureTransport(tr, c.v, n, &cc)
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: cc.Transport(tr)}
			get := func() {
				var wg sync.WaitGroup
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, err := client.Get(srv.URL)
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.ProtoMajor != c.wantProto {
							t.Errorf("answered over %s", resp.Proto)
						}
					}()
				}
				wg.Wait()
			}
			// One request first, as a store's opening listing: HTTP/2
			// then has its connection before the burst (Go dials one per
			// request waiting for the first connection otherwise).
			round.Lock()
			first = false
			round.Unlock()
			if resp, err := client.Get(srv.URL); err != nil {
				t.Fatal(err)
			} else {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			round.Lock()
			first = true
			round.Unlock()
			get()
			round.Lock()
			first = false
			round.Unlock()
			get()
			s := cc.Stats()
			if s.Opened != c.wantConns || s.PeakOpen != c.wantConns {
				t.Errorf("%+v: want %d connections opened", s, c.wantConns)
			}
			if s.Reused < n+1 {
				t.Errorf("%+v: the second round did not reuse connections", s)
			}
			if got := tr.MaxConnsPerHost; got != MaxConns(n) || tr.MaxIdleConnsPerHost < n {
				t.Errorf("pool: %d idle, %d at most per host", tr.MaxIdleConnsPerHost, got)
			}
		})
	}
}

// TestConfigureTransportRootsFromEnv trusts the certificate SSL_CERT_FILE
// names, read for the transport at its first TLS connection (counted as
// any other); an unreadable file fails the connection; roots set on the
// transport afterwards (AWS_CA_BUNDLE) win.
func TestConfigureTransportRootsFromEnv(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	own := x509.NewCertPool()
	own.AddCert(srv.Certificate())
	t.Setenv("SSL_CERT_DIR", "")
	for _, c := range []struct {
		name, file string
		later      *x509.CertPool // RootCAs set after ConfigureTransport
		trusts     bool
	}{
		{"unset", "", nil, false},
		{"file", f, nil, true},
		{"missing file", f + ".missing", nil, false},
		{"roots set later", f + ".missing", own, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SSL_CERT_FILE", c.file)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			var cc ConnCounter
			ConfigureTransport(tr, HTTPAuto, 4, &cc)
			if c.later != nil {
				tr.TLSClientConfig.RootCAs = c.later
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != c.trusts {
				t.Errorf("SSL_CERT_FILE=%q: %v", c.file, err)
			}
			if c.trusts && cc.Stats().Opened != 1 {
				t.Errorf("%+v: the connection was not counted", cc.Stats())
			}
		})
	}
}
