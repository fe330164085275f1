package bucket

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPVersion is the HTTP version of a bucket store's requests
// (--bucket-http).
type HTTPVersion int

const (
	// HTTPAuto is the measured default: HTTP/1.1 with a connection per
	// request in flight (see docs/BUCKETS.md). The zero value.
	HTTPAuto HTTPVersion = iota
	// HTTP1 is HTTP/1.1 only: "h2" is never offered in the TLS handshake,
	// and every request in flight has a connection of its own, kept alive
	// for the next one.
	HTTP1
	// HTTP2 offers HTTP/2 to TLS endpoints (ALPN), as Go and most SDKs do
	// by default: an endpoint that accepts multiplexes every request in
	// flight on one connection (more only beyond the server's stream
	// limit). Endpoints that do not speak HTTP/2 get HTTP/1.1.
	HTTP2
)

// String returns the --bucket-http spelling: "auto", "1.1" or "2".
func (v HTTPVersion) String() string {
	switch v {
	case HTTP1:
		return "1.1"
	case HTTP2:
		return "2"
	}
	return "auto"
}

// ParseHTTPVersion parses a --bucket-http value, exactly as documented:
// "auto", "1.1" or "2" ("" is a setting not given: HTTPAuto). Any other
// spelling is an error naming the value.
func ParseHTTPVersion(s string) (HTTPVersion, error) {
	switch s {
	case "", "auto":
		return HTTPAuto, nil
	case "1.1":
		return HTTP1, nil
	case "2":
		return HTTP2, nil
	}
	return HTTPAuto, fmt.Errorf("invalid HTTP version %q (want auto, 1.1 or 2)", s)
}

// ConnStats counts a bucket store's TCP connections. Opened counts the
// connections dialled, Reused the requests sent on a connection that had
// served an earlier one (keep-alive, or another stream of an HTTP/2
// connection), PeakOpen the most connections open at once.
type ConnStats struct {
	Opened   int64 `json:"opened"`
	Reused   int64 `json:"reused"`
	PeakOpen int64 `json:"peak-open"`
}

// Add returns the sum of s and o (PeakOpen adds too: stores of a chain
// hold their connections side by side).
func (s ConnStats) Add(o ConnStats) ConnStats {
	return ConnStats{Opened: s.Opened + o.Opened, Reused: s.Reused + o.Reused, PeakOpen: s.PeakOpen + o.PeakOpen}
}

// ConnCounter counts the connections of one store's transport (see
// ConfigureTransport). It is safe for concurrent use; the zero value is
// ready.
type ConnCounter struct {
	opened, reused, open, peak atomic.Int64
}

// Stats returns the counts so far.
func (c *ConnCounter) Stats() ConnStats {
	return ConnStats{Opened: c.opened.Load(), Reused: c.reused.Load(), PeakOpen: c.peak.Load()}
}

// dialed notes a new connection and returns it wrapped so that its close
// is noted.
func (c *ConnCounter) dialed(conn net.Conn) net.Conn {
	c.opened.Add(1)
	n := c.open.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	return &countedConn{Conn: conn, c: c}
}

// trace returns ctx with a client trace that counts reused connections.
func (c *ConnCounter) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Reused {
			c.reused.Add(1)
		}
	}})
}

// countedConn notes its first Close in its counter.
type countedConn struct {
	net.Conn
	c      *ConnCounter
	closed atomic.Bool
}

func (cc *countedConn) Close() error {
	if cc.closed.CompareAndSwap(false, true) {
		cc.c.open.Add(-1)
	}
	return cc.Conn.Close()
}

// MaxConns returns the most connections a store keeps to one host for
// conc requests in flight (conc <= 0: DefaultConcurrency): the requests in
// flight, the few that bypass the chunk GET limit (listings, index reads)
// and connections the server has closed that Go has not yet noticed.
func MaxConns(conc int) int {
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	return 2*conc + 8
}

// ConfigureTransport sets up tr for a bucket store with conc requests in
// flight (conc <= 0: DefaultConcurrency) over HTTP version v:
//
//   - pools: conc + conc/4 + 2 idle connections kept per host (Go's default
//     of 2 would make every further request dial anew), at most
//     MaxConns(conc) per host, idle ones closed after 90 s;
//   - HTTP/1.1 only (HTTPAuto, HTTP1): HTTP/2 disabled and "h2" taken out
//     of the TLS ALPN list, even where a cloned configuration carried it;
//   - HTTP2: HTTP/2 offered over TLS;
//   - counting: when conns is non-nil, every connection tr dials is counted
//     in it (wrap the transport with conns.Transport to count reuse too);
//   - trust: with SSL_CERT_FILE or SSL_CERT_DIR set and no roots or pin
//     configured, the certificates there are the roots, read at the
//     transport's first TLS connection (Go reads them once per process: a
//     store opened later sees a change). An SSL_CERT_FILE that cannot be
//     read or holds no certificate fails the TLS connections.
func ConfigureTransport(tr *http.Transport, v HTTPVersion, conc int, conns *ConnCounter) {
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	tr.MaxIdleConns = max(100, 2*conc)
	tr.MaxIdleConnsPerHost = conc + conc/4 + 2
	tr.MaxConnsPerHost = MaxConns(conc)
	tr.IdleConnTimeout = 90 * time.Second
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	if v == HTTP2 {
		protos.SetHTTP2(true)
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.ForceAttemptHTTP2 = false
		// A non-nil empty map disables Go's HTTP/2; the ALPN list must
		// lose "h2" as well, or a server choosing it would get HTTP/1.1.
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		if tr.TLSClientConfig != nil {
			tr.TLSClientConfig.NextProtos = slices.DeleteFunc(slices.Clone(tr.TLSClientConfig.NextProtos), func(p string) bool { return p == "h2" })
		}
	}
	tr.Protocols = protos
	if conns != nil {
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return conns.dialed(c), nil
		}
	}
	rootsFromEnv(tr)
}

// rootsFromEnv makes tr verify TLS endpoints against the certificates of
// SSL_CERT_FILE and SSL_CERT_DIR (as Go's system pool reads them, but read
// for this transport, at its first TLS connection) when either is set and
// nothing else decides trust: no RootCAs, no InsecureSkipVerify (a pinned
// certificate), no TLS dialer of its own. Roots set on tr after this (the
// AWS SDK's AWS_CA_BUNDLE) are used instead. Connections through an HTTP
// proxy keep Go's own verification.
func rootsFromEnv(tr *http.Transport) {
	file, dir := os.Getenv("SSL_CERT_FILE"), os.Getenv("SSL_CERT_DIR")
	if (file == "" && dir == "") || tr.DialTLSContext != nil || tr.DialTLS != nil {
		return
	}
	if c := tr.TLSClientConfig; c != nil && (c.RootCAs != nil || c.InsecureSkipVerify) {
		return
	}
	roots := sync.OnceValues(func() (*x509.CertPool, error) { return loadRoots(file, dir) })
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if tr.TLSClientConfig != nil {
			cfg = tr.TLSClientConfig.Clone()
		}
		if cfg.RootCAs == nil {
			pool, err := roots()
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = pool // nil (nothing in SSL_CERT_DIR): Go's own roots
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			cfg.ServerName = host
		}
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
}

// CheckTrustEnv reports, before any request, a trust setting of the
// environment that the store's TLS connections could not use: an
// SSL_CERT_FILE that cannot be read or holds no PEM certificate. The error
// names the variable and the file; it is a configuration error, not worth
// retrying. Nil when SSL_CERT_FILE is unset or usable.
func CheckTrustEnv() error {
	file := os.Getenv("SSL_CERT_FILE")
	if file == "" {
		return nil
	}
	_, err := readPEMFile("SSL_CERT_FILE", file)
	return err
}

// RootsWithBundle returns the system roots (as Go reads them, honouring
// SSL_CERT_FILE and SSL_CERT_DIR) with the PEM certificates of the file
// named by the environment variable name added, as the AWS SDK and CLI
// apply AWS_CA_BUNDLE: nil, nil when the variable is unset or empty. A
// file that cannot be read or holds no PEM certificate is an error naming
// the variable and the file.
func RootsWithBundle(name string) (*x509.CertPool, error) {
	file := os.Getenv(name)
	if file == "" {
		return nil, nil
	}
	pem, err := readPEMFile(name, file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pool.AppendCertsFromPEM(pem)
	return pool, nil
}

// readPEMFile reads file, named by the environment variable name, and
// checks that it holds at least one PEM certificate.
func readPEMFile(name, file string) ([]byte, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in it", name, file)
	}
	return pem, nil
}

// loadRoots reads the PEM certificates of file and of the files in the
// directories of dir (colon separated); nil when there are none. A file
// that cannot be read or holds no certificate is an error.
func loadRoots(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	found := false
	if file != "" {
		pem, err := readPEMFile("SSL_CERT_FILE", file)
		if err != nil {
			return nil, err
		}
		pool.AppendCertsFromPEM(pem)
		found = true
	}
	for _, d := range strings.Split(dir, ":") {
		if d == "" {
			continue
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if pem, err := os.ReadFile(filepath.Join(d, e.Name())); err == nil && pool.AppendCertsFromPEM(pem) {
				found = true
			}
		}
	}
	if !found {
		return nil, nil
	}
	return pool, nil
}

// Transport returns base wrapped so that every request notes in c whether
// it reused a connection (base being a transport ConfigureTransport
// counts the dials of).
func (c *ConnCounter) Transport(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return base.RoundTrip(req.WithContext(c.trace(req.Context())))
	})
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
