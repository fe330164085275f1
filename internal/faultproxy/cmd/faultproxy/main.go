// Command faultproxy runs the fault-injecting reverse proxy of package
// faultproxy standalone, for benchmarks:
//
//	go run ./internal/faultproxy/cmd/faultproxy -listen 127.0.0.1:0 -target http://127.0.0.1:7070 -latency 20ms
//
// It prints "faultproxy listening on http://ADDR" on stdout once ready, and
// a request/fault count when stopped (SIGINT/SIGTERM).
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
	"time"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	target := flag.String("target", "", "target base URL, e.g. http://127.0.0.1:7070 (required)")
	latency := flag.Duration("latency", 0, "latency added to every request")
	failEvery := flag.Int("fail-every", 0, "answer every N-th request with -fail-status (0: never)")
	failStatus := flag.Int("fail-status", 503, "HTTP status for -fail-every")
	resetEvery := flag.Int("reset-every", 0, "reset every N-th GET mid-body (0: never)")
	resetAfter := flag.Int64("reset-after", 1024, "body bytes sent before a reset")
	bandwidth := flag.Int64("bandwidth", 0, "cap all response bodies together at this many bytes per second (0: no cap)")
	slowAfter := flag.Int("slowdown-after", 0, "open a throttling window after this many chunk GETs (with -slowdown-for)")
	slowFor := flag.Duration("slowdown-for", 0, "throttling window: answer every request 503 SlowDown for this long (0: none)")
	retryAfter := flag.Duration("retry-after", 5*time.Second, "Retry-After sent with the throttling window's answers")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "faultproxy: -target is required")
		os.Exit(2)
	}
	var rules []faultproxy.Rule
	if *failEvery > 0 {
		rules = append(rules, faultproxy.Rule{Every: *failEvery, Status: *failStatus})
	}
	if *resetEvery > 0 {
		rules = append(rules, faultproxy.Rule{Method: "GET", Every: *resetEvery, Reset: true, ResetAfter: *resetAfter})
	}
	if *slowFor > 0 {
		// -slowdown-after counts every request; the window then answers them all.
		rules = append([]faultproxy.Rule{{PathContains: "", After: *slowAfter, For: *slowFor, Status: 503, Code: "SlowDown", RetryAfter: *retryAfter}}, rules...)
	}
	p, err := faultproxy.Start(*listen, *target, *latency, rules...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p.SetBandwidth(*bandwidth)
	fmt.Printf("faultproxy listening on %s\n", p.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	p.Close()
	fmt.Fprintf(os.Stderr, "faultproxy: %d requests, %d faults injected\n", p.Requests(), p.Faults())
}
