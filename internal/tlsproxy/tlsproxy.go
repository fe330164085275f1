// Package tlsproxy is an HTTPS reverse proxy that puts a test object
// server (versitygw, fake-gcs-server) behind TLS the way a provider's edge
// is: a self-signed certificate made at start, HTTP/2 offered by ALPN next
// to HTTP/1.1, connections kept alive, and optionally latency added to
// every request and the bytes sent on each connection capped (providers
// limit the throughput of one connection). It counts the TCP connections
// it accepted, the most open at once and the requests per HTTP version.
//
// Requests are forwarded with their Host header unchanged, so signed S3
// requests stay valid.
//
// Test and benchmark support only: imported by tests and by the other
// packages under internal/, never by a non-test package outside internal/
// (TestLayout in the module root's layout_test.go checks this).
package tlsproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures Start.
type Options struct {
	// Listen is the address to listen on; "" means "127.0.0.1:0".
	Listen string
	// Target is the base URL requests are forwarded to, e.g.
	// "http://127.0.0.1:7070".
	Target string
	// NoHTTP2 offers only HTTP/1.1 in the TLS handshake.
	NoHTTP2 bool
	// ConnBytesPerSecond caps the bytes sent to the client on each
	// connection (TLS records included); 0: no cap.
	ConnBytesPerSecond int64
	// Latency is added before every request is forwarded.
	Latency time.Duration
}

// Proxy is a running proxy.
type Proxy struct {
	// URL is "https://127.0.0.1:PORT".
	URL string
	// Host is "127.0.0.1:PORT".
	Host string
	// CertPEM is the proxy's self-signed certificate (for 127.0.0.1 and
	// localhost), PEM encoded: what a client trusts (SSL_CERT_FILE,
	// AWS_CA_BUNDLE, rclone --ca-cert).
	CertPEM []byte
	// Fingerprint is the SHA-256 of the certificate, "aa:bb:…" (as
	// --s3-fingerprint takes it).
	Fingerprint string

	srv                  *http.Server
	accepted, open, peak atomic.Int64
	h1, h2               atomic.Int64
	done                 chan struct{}
}

// Start starts the proxy; it serves until Close.
func Start(o Options) (*Proxy, error) {
	target, err := url.Parse(o.Target)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("tlsproxy: bad target %q", o.Target)
	}
	listen := o.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cert, certPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{Host: ln.Addr().String(), CertPEM: certPEM, done: make(chan struct{})}
	p.URL = "https://" + p.Host
	sum := sha256.Sum256(cert.Certificate[0])
	p.Fingerprint = colonHex(sum[:])
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 1000,
		IdleConnTimeout:     30 * time.Second,
	}
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	protos := []string{"h2", "http/1.1"}
	if o.NoHTTP2 {
		protos = []string{"http/1.1"}
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 {
				p.h2.Add(1)
			} else {
				p.h1.Add(1)
			}
			if o.Latency > 0 {
				select {
				case <-time.After(o.Latency):
				case <-r.Context().Done():
					return
				}
			}
			rp.ServeHTTP(w, r)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos, MinVersion: tls.VersionTLS12},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	if o.NoHTTP2 {
		p.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	cl := &countingListener{Listener: ln, p: p, rate: o.ConnBytesPerSecond}
	go func() {
		defer close(p.done)
		p.srv.ServeTLS(cl, "", "")
	}()
	return p, nil
}

// Accepted returns the TCP connections accepted so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// PeakOpen returns the most connections open at once so far.
func (p *Proxy) PeakOpen() int64 { return p.peak.Load() }

// Requests returns the requests received over HTTP/1.x and over HTTP/2.
func (p *Proxy) Requests() (h1, h2 int64) { return p.h1.Load(), p.h2.Load() }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = p.srv.Close()
	}
	<-p.done
	return err
}

// countingListener counts accepted connections and paces what is written
// to each.
type countingListener struct {
	net.Listener
	p    *Proxy
	rate int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.p.accepted.Add(1)
	n := l.p.open.Add(1)
	for pk := l.p.peak.Load(); n > pk && !l.p.peak.CompareAndSwap(pk, n); pk = l.p.peak.Load() {
	}
	return &pacedConn{Conn: c, p: l.p, rate: l.rate}, nil
}

// pacedConn sends at most rate bytes per second (0: no cap) and notes its
// close.
type pacedConn struct {
	net.Conn
	p      *Proxy
	rate   int64
	mu     sync.Mutex
	next   time.Time // when the next byte is due
	closed atomic.Bool
	// now and sleep are the clock the pacing reads and waits on (nil:
	// time.Now and time.Sleep); tests give their own.
	now   func() time.Time
	sleep func(time.Duration)
}

// paceSlice is the most bytes written at once under a cap, so that a
// large write is spread over time rather than sent as a burst.
const paceSlice = 16 << 10

// maxCredit is the most sending time an idle connection saves up.
const maxCredit = 50 * time.Millisecond

func (c *pacedConn) Write(b []byte) (int, error) {
	if c.rate <= 0 {
		return c.Conn.Write(b)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clock, sleep := c.now, c.sleep
	if clock == nil {
		clock, sleep = time.Now, time.Sleep
	}
	written := 0
	for len(b) > 0 {
		n := min(len(b), paceSlice)
		now := clock()
		if c.next.Before(now.Add(-maxCredit)) {
			c.next = now.Add(-maxCredit)
		}
		if d := c.next.Sub(now); d > 0 {
			sleep(d)
		}
		m, err := c.Conn.Write(b[:n])
		written += m
		c.next = c.next.Add(time.Duration(int64(m) * int64(time.Second) / c.rate))
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

func (c *pacedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.p.open.Add(-1)
	}
	return c.Conn.Close()
}

// selfSigned makes an ECDSA P-256 certificate for 127.0.0.1, ::1 and
// localhost, valid for a day.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "tlsproxy test endpoint"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	if der == nil {
		return tls.Certificate{}, nil, errors.New("tlsproxy: no certificate made")
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, certPEM, nil
}

// colonHex formats b as "aa:bb:…".
func colonHex(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(parts, ":")
}
