// Package faultproxy is a small fault-injecting HTTP reverse proxy for tests
// and benchmarks of the bucket backends: it forwards requests to a target
// server (keeping the Host header, so signed S3 requests stay valid) and,
// according to rules, adds latency, answers with an error status instead of
// forwarding (for a while: a throttling window, with Retry-After), resets
// the connection in the middle of the response body, or stalls it (headers
// and some bytes sent, then silence). It can cap the bandwidth of all
// response bodies together (a slow link). It counts requests and injected
// faults, the most requests handled at once, and the requests their client
// gave up on during a delay.
//
// Test support only: imported by tests and by the other packages under
// internal/, never by a non-test package outside internal/ (TestLayout in
// the module root's layout_test.go checks this).
package faultproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Rule selects requests and says what to do with them. Matching requests
// are numbered 1, 2, … per rule; the rule acts on number n when n > After,
// (n-After) is a multiple of Every (Every ≤ 1: every one), and it has acted
// fewer than Times times (0: unlimited) and, with For, less than For has
// passed since it first acted (a window: the rule then acts on every
// matching request until the window closes, and never again). Acting means
// adding Delay and, for the first acting rule with a Status, Reset or
// Stall, that fault.
type Rule struct {
	// Method matches the HTTP method ("" any).
	Method string
	// PathContains matches a substring of the request's escaped URL path
	// ("" any).
	PathContains string
	// QueryContains matches a substring of the raw query ("" any).
	QueryContains string
	// Header matches requests carrying this header ("" any), e.g.
	// "If-None-Match".
	Header string

	After, Every, Times int

	// Delay is added before the request is handled (latency).
	Delay time.Duration
	// Status, when non-zero, answers with this HTTP status (e.g. 503, 429,
	// 501) and an S3-style XML error body without contacting the target.
	Status int
	// Reset forwards the request, sends the response headers and the first
	// ResetAfter bytes of the body, then resets the TCP connection.
	Reset      bool
	ResetAfter int64
	// Code replaces the S3 error code of a Status answer (e.g. "SlowDown").
	Code string
	// Body, when not empty, is sent as is (Content-Type text/html) with a
	// Status answer instead of the S3-style XML error: what a proxy or
	// ingress in front of the store answers.
	Body string
	// RetryAfter, when non-zero, is sent as Retry-After (whole seconds)
	// with a Status answer.
	RetryAfter time.Duration
	// Stall forwards the request, sends the response headers and the first
	// StallAfter bytes of the body, then sends nothing more until the client
	// goes away.
	Stall      bool
	StallAfter int64
	// For makes the rule a window: from its first action it acts on every
	// matching request for this long, then never again.
	For time.Duration
}

type ruleState struct {
	Rule
	seen, acted int
	opened      time.Time // first action of a For window
}

// Proxy is a running fault-injecting proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	// URL is the proxy's base URL, "http://127.0.0.1:PORT".
	URL string

	target    *url.URL
	latency   time.Duration
	ln        net.Listener
	srv       *http.Server
	rp        *httputil.ReverseProxy
	transport *http.Transport

	mu    sync.Mutex
	rules []*ruleState
	link  *link // nil: no bandwidth cap

	requests, faults atomic.Int64
	// inFlight counts requests in ServeHTTP now, peak the most at once;
	// abandoned the requests whose client went away during their delay.
	inFlight, peak, abandoned atomic.Int64
}

// SetBandwidth caps the bytes per second of all response bodies together
// (0: no cap), like a slow link shared by every connection.
func (p *Proxy) SetBandwidth(bytesPerSecond int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bytesPerSecond <= 0 {
		p.link = nil
		return
	}
	p.link = &link{rate: bytesPerSecond}
}

// link paces writes to a shared byte rate.
type link struct {
	rate int64
	mu   sync.Mutex
	next time.Time // when the link is free again
}

// wait blocks until n more bytes may pass, or ctx ends.
func (l *link) wait(ctx context.Context, n int) error {
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	l.next = l.next.Add(time.Duration(int64(n) * int64(time.Second) / l.rate))
	at := l.next
	l.mu.Unlock()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pacedWriter writes a response body through the link in small pieces.
type pacedWriter struct {
	http.ResponseWriter
	l   *link
	ctx context.Context
}

func (w *pacedWriter) Write(b []byte) (int, error) {
	const piece = 16 << 10
	done := 0
	for done < len(b) {
		n := min(piece, len(b)-done)
		if err := w.l.wait(w.ctx, n); err != nil {
			return done, err
		}
		k, err := w.ResponseWriter.Write(b[done : done+n])
		done += k
		if err != nil {
			return done, err
		}
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
	return done, nil
}

func (w *pacedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Start listens on listen (e.g. "127.0.0.1:0") and forwards to target (a
// base URL such as "http://127.0.0.1:7070"), adding latency to every request
// and applying rules. Close stops it.
func Start(listen, target string, latency time.Duration, rules ...Rule) (*Proxy, error) {
	tu, err := url.Parse(target)
	if err != nil || tu.Scheme == "" || tu.Host == "" {
		return nil, fmt.Errorf("faultproxy: invalid target URL %q", target)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		URL:     "http://" + ln.Addr().String(),
		target:  tu,
		latency: latency,
		ln:      ln,
		transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConns:        2000,
			MaxIdleConnsPerHost: 1000,
			IdleConnTimeout:     60 * time.Second,
		},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(tu)
			pr.Out.Host = pr.In.Host // keep the signed Host header
		},
		Transport:     p.transport,
		FlushInterval: -1,
		BufferPool:    &copyBuffers{pool: sync.Pool{New: func() any { return make([]byte, copyBufferSize) }}},
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	p.SetRules(rules...)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// SetRules replaces the rules and restarts their counts.
func (p *Proxy) SetRules(rules ...Rule) {
	rs := make([]*ruleState, len(rules))
	for i, r := range rules {
		rs[i] = &ruleState{Rule: r}
	}
	p.mu.Lock()
	p.rules = rs
	p.mu.Unlock()
}

// Matched returns, per rule in the order given, how many requests matched
// it (whether or not it acted on them). A rule with no Status and no Reset
// is a pure counter.
func (p *Proxy) Matched() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := make([]int, len(p.rules))
	for i, r := range p.rules {
		n[i] = r.seen
	}
	return n
}

// Acted returns, per rule in the order given, how many times it acted
// (injected its fault or added its delay).
func (p *Proxy) Acted() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := make([]int, len(p.rules))
	for i, r := range p.rules {
		n[i] = r.acted
	}
	return n
}

// Requests returns how many requests the proxy has received.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Faults returns how many requests got an injected status or reset.
func (p *Proxy) Faults() int64 { return p.faults.Load() }

// PeakInFlight returns the most requests the proxy has been handling at
// once since it started (from receipt to the end of the response, delays
// included): with a latency, a count above 1 shows that the client sent
// requests concurrently, whatever the machine's speed.
func (p *Proxy) PeakInFlight() int64 { return p.peak.Load() }

// Abandoned returns how many requests the client gave up on (closed the
// connection or cancelled) while the proxy still held them in their latency
// or a rule's Delay: what a client timeout shorter than the delay does. The
// count is raised when the proxy notices, which may be shortly after the
// client has moved on.
func (p *Proxy) Abandoned() int64 { return p.abandoned.Load() }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = p.srv.Close()
	}
	p.transport.CloseIdleConnections()
	return err
}

func (r *ruleState) matches(req *http.Request) bool {
	return (r.Method == "" || strings.EqualFold(r.Method, req.Method)) &&
		(r.PathContains == "" || strings.Contains(req.URL.EscapedPath(), r.PathContains)) &&
		(r.QueryContains == "" || strings.Contains(req.URL.RawQuery, r.QueryContains)) &&
		(r.Header == "" || req.Header.Get(r.Header) != "")
}

// pick returns the rule acting on req (nil if none) and the total delay.
func (p *Proxy) pick(req *http.Request) (*Rule, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delay := p.latency
	var act *Rule
	for _, r := range p.rules {
		if !r.matches(req) {
			continue
		}
		r.seen++
		n := r.seen - r.After
		switch {
		case r.For > 0 && !r.opened.IsZero():
			if time.Since(r.opened) >= r.For {
				continue // the window has closed
			}
		case n <= 0 || (r.Every > 1 && n%r.Every != 0) || (r.Times > 0 && r.acted >= r.Times):
			continue
		}
		if r.For > 0 && r.opened.IsZero() {
			r.opened = time.Now()
		}
		fault := r.Status != 0 || r.Reset || r.Stall
		if r.Delay == 0 && (!fault || act != nil) {
			continue
		}
		r.acted++
		delay += r.Delay
		if fault && act == nil {
			rule := r.Rule
			act = &rule
		}
	}
	return act, delay
}

// ServeHTTP handles one proxied request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p.requests.Add(1)
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for peak := p.peak.Load(); n > peak && !p.peak.CompareAndSwap(peak, n); peak = p.peak.Load() {
	}
	act, delay := p.pick(req)
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			p.abandoned.Add(1)
			return
		}
	}
	p.mu.Lock()
	l := p.link
	p.mu.Unlock()
	switch {
	case act == nil && l != nil:
		p.rp.ServeHTTP(&pacedWriter{ResponseWriter: w, l: l, ctx: req.Context()}, req)
	case act == nil:
		p.rp.ServeHTTP(w, req)
	case act.Status != 0:
		p.faults.Add(1)
		io.Copy(io.Discard, req.Body)
		if act.RetryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(int64((act.RetryAfter+time.Second-1)/time.Second)))
		}
		if act.Body != "" {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", fmt.Sprint(len(act.Body)))
			w.WriteHeader(act.Status)
			if req.Method != http.MethodHead {
				io.WriteString(w, act.Body)
			}
			break
		}
		writeError(w, act.Status, act.Code)
	case act.Stall:
		p.faults.Add(1)
		p.stallMidBody(w, req, act.StallAfter)
	default:
		p.faults.Add(1)
		p.resetMidBody(w, req, act.ResetAfter)
	}
}

// forward sends req to the target and returns its response; on failure it
// answers 502 itself and returns false.
func (p *Proxy) forward(w http.ResponseWriter, req *http.Request) (*http.Response, bool) {
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme = p.target.Scheme
	out.URL.Host = p.target.Host
	out.Host = req.Host
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil, false
	}
	return resp, true
}

// stallMidBody forwards req, writes the response head and the first n body
// bytes, then holds the connection silent until the client or the proxy
// closes it.
func (p *Proxy) stallMidBody(w http.ResponseWriter, req *http.Request, n int64) {
	resp, ok := p.forward(w, req)
	if !ok {
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.CopyN(w, resp.Body, n)
	http.NewResponseController(w).Flush()
	<-req.Context().Done()
}

func writeError(w http.ResponseWriter, status int, c string) {
	code := map[int]string{
		http.StatusServiceUnavailable:  "ServiceUnavailable",
		http.StatusTooManyRequests:     "TooManyRequests",
		http.StatusNotImplemented:      "NotImplemented",
		http.StatusInternalServerError: "InternalError",
		http.StatusForbidden:           "AccessDenied",
		http.StatusConflict:            "ConditionalRequestConflict",
	}[status]
	if c != "" {
		code = c
	}
	if code == "" {
		code = strings.ReplaceAll(http.StatusText(status), " ", "")
	}
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>injected by faultproxy</Message></Error>", code)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// resetMidBody forwards req, writes the response head and the first n body
// bytes to the client itself, then resets the connection (SO_LINGER 0).
func (p *Proxy) resetMidBody(w http.ResponseWriter, req *http.Request, n int64) {
	resp, ok := p.forward(w, req)
	if !ok {
		return
	}
	defer resp.Body.Close()
	conn, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	writeHead(bw.Writer, resp)
	io.CopyN(bw, resp.Body, n)
	bw.Flush()
	// Give the client a moment to read the partial body before the reset.
	time.Sleep(5 * time.Millisecond)
}

func writeHead(bw *bufio.Writer, resp *http.Response) {
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\n", resp.Status)
	h := resp.Header.Clone()
	h.Del("Transfer-Encoding")
	h.Del("Connection")
	if resp.ContentLength >= 0 {
		h.Set("Content-Length", fmt.Sprint(resp.ContentLength))
	}
	h.Write(bw)
	bw.WriteString("\r\n")
}

// copyBufferSize is the proxy's body copy buffer: large enough that a 4 MiB
// chunk crosses the proxy in a few dozen reads and writes, so the proxy's own
// CPU cost stays small next to the client's on a shared machine.
const copyBufferSize = 256 << 10

// copyBuffers lends body copy buffers to httputil.ReverseProxy.
type copyBuffers struct{ pool sync.Pool }

func (c *copyBuffers) Get() []byte  { return c.pool.Get().([]byte) }
func (c *copyBuffers) Put(b []byte) { c.pool.Put(b[:cap(b)]) }
