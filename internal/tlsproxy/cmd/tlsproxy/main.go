// Command tlsproxy runs the HTTPS proxy of package tlsproxy standalone, for
// benchmarks: a provider-shaped endpoint (TLS, HTTP/2 offered, a cap per
// connection, latency) in front of a test server:
//
//	go run ./internal/tlsproxy/cmd/tlsproxy -target http://127.0.0.1:7070 -conn-mibps 50 -latency 10ms -cert /tmp/cert.pem
//
// It writes the certificate (PEM) to -cert, prints "tlsproxy listening on
// https://ADDR fingerprint aa:bb:…" on stdout once ready, and its counts
// when stopped (SIGINT/SIGTERM): "tlsproxy: N connections (peak P), H1
// HTTP/1.1 and H2 HTTP/2 requests".
//
// Test and benchmark support only (bench/*.sh build it), like everything
// under internal/.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pbsdirect/pbsdirect/internal/tlsproxy"
)

func main() {
	var o tlsproxy.Options
	flag.StringVar(&o.Listen, "listen", "127.0.0.1:0", "listen address")
	flag.StringVar(&o.Target, "target", "", "target base URL, e.g. http://127.0.0.1:7070 (required)")
	flag.BoolVar(&o.NoHTTP2, "no-h2", false, "offer HTTP/1.1 only")
	mibps := flag.Float64("conn-mibps", 0, "cap what each connection sends at this many MiB/s (0: no cap)")
	flag.DurationVar(&o.Latency, "latency", 0, "latency added to every request")
	certFile := flag.String("cert", "", "write the certificate (PEM) to this file")
	flag.Parse()
	if o.Target == "" {
		fmt.Fprintln(os.Stderr, "tlsproxy: -target is required")
		os.Exit(2)
	}
	o.ConnBytesPerSecond = int64(*mibps * (1 << 20))
	p, err := tlsproxy.Start(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *certFile != "" {
		if err := os.WriteFile(*certFile, p.CertPEM, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("tlsproxy listening on %s fingerprint %s\n", p.URL, p.Fingerprint)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	p.Close()
	h1, h2 := p.Requests()
	fmt.Fprintf(os.Stderr, "tlsproxy: %d connections (peak %d), %d HTTP/1.1 and %d HTTP/2 requests\n", p.Accepted(), p.PeakOpen(), h1, h2)
}
