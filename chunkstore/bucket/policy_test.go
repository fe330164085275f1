package bucket

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5", 5 * time.Second, true},
		{"0", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"soon", 0, false},
		{"Mon, 30 Nov 2026 12:00:07 GMT", 7 * time.Second, true},
		{"Mon, 30 Nov 2026 11:00:00 GMT", 0, true},
	} {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestLimiterAIMD: throttling halves the GETs in flight (once per burst),
// successes raise them by one per limit's worth, never above the ceiling.
func TestLimiterAIMD(t *testing.T) {
	var l limiter
	l.init(32)
	ctx := context.Background()
	for range 32 {
		l.acquire(ctx)
	}
	for range 32 { // one burst of throttled answers: one halving
		l.release(false, true)
	}
	if _, _, lim, _ := l.stats(); lim != 16 {
		t.Fatalf("limit after a throttled burst: %d, want 16", lim)
	}
	l.lastDecrease = time.Time{} // the next burst comes later
	l.acquire(ctx)
	l.release(false, true)
	dec, _, lim, minLim := l.stats()
	if lim != 8 || dec != 2 || minLim != 8 {
		t.Fatalf("after a second burst: limit %d, %d decreases, min %d; want 8, 2, 8", lim, dec, minLim)
	}
	for range 8 + 9 + 10 {
		l.acquire(ctx)
		l.release(true, false)
	}
	if _, inc, lim, _ := l.stats(); lim != 11 || inc != 3 {
		t.Fatalf("after 27 successes: limit %d (%d increases), want 11 (3)", lim, inc)
	}
	for range 2000 {
		l.acquire(ctx)
		l.release(true, false)
	}
	if _, _, lim, _ := l.stats(); lim != 32 {
		t.Fatalf("limit %d, want back at the ceiling 32", lim)
	}
	// A full limiter makes acquire wait, until ctx ends.
	l.init(1)
	l.acquire(ctx)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := l.acquire(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire on a full limiter: %v", err)
	}
}

// TestPolicyRetryFor: a request that keeps failing is retried until
// RetryFor is spent, then given up with ErrUnavailable; Fatal errors are not
// retried; Retry-After is honoured.
func TestPolicyRetryFor(t *testing.T) {
	transient := errors.New("503")
	p := NewPolicy(Options{RetryFor: 200 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	n := 0
	start := time.Now()
	err := p.Do(context.Background(), true, func(context.Context) error { n++; return transient }, func(error) Class { return Transient })
	el := time.Since(start)
	if !errors.Is(err, chunkstore.ErrUnavailable) || !errors.Is(err, transient) || !strings.Contains(err.Error(), "--retry-for") {
		t.Fatalf("err = %v", err)
	}
	// At least RetryFor (a wait has a lower bound, not an upper one: a busy
	// machine only makes it longer). The attempts are bounded by the
	// backoff, not the clock: retry k waits at least half of MinBackoff
	// doubled k-1 times, capped at MaxBackoff, so 1, 2, 4, 8 ms give 7.5 ms
	// of waits and each later one at least 5 ms: at most 4 + ⌈192.5/5⌉ = 43
	// retries fit in RetryFor, plus the last one whose wait is cut short,
	// plus the first attempt. A slow machine only makes fewer.
	if el < 150*time.Millisecond || n < 5 || n > 45 {
		t.Errorf("gave up after %v and %d attempts, want about 200ms and 5 to 45 attempts", el, n)
	}
	if got := p.Stats().Retries; got != int64(n-1) {
		t.Errorf("Retries = %d, want %d", got, n-1)
	}
	n = 0
	fatal := errors.New("404")
	if err := p.Do(context.Background(), false, func(context.Context) error { n++; return fatal }, func(error) Class { return Fatal }); err != fatal || n != 1 {
		t.Errorf("fatal: %v after %d attempts", err, n)
	}

	// Retry-After from the transport: the wait is the server's, not the backoff.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	p = NewPolicy(Options{RetryFor: time.Minute, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	hc := &http.Client{Transport: p.Transport(http.DefaultTransport)}
	path := "/slow"
	n = 0
	start = time.Now()
	err = p.Do(context.Background(), true, func(ctx context.Context) error {
		n++
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		path = "/"
		if resp.StatusCode != 200 {
			return errors.New(resp.Status)
		}
		return nil
	}, func(error) Class { return Transient })
	if err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("retried after %v, want the 1 s of Retry-After", el)
	}
	if s := p.Stats(); s.Throttled != 1 || s.Retries != 1 || s.LimitDecreases != 1 {
		t.Errorf("stats %+v, want 1 throttled answer, 1 retry, 1 decrease", s)
	}
}

// TestTransportStall: a response whose body stops moving is cut after the
// I/O timeout with a StallError; one that keeps moving, however slowly in
// total, is not.
func TestTransportStall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(200)
		for i := range 10 {
			if r.URL.Path == "/stall" && i == 3 {
				<-r.Context().Done()
				return
			}
			w.Write([]byte{'x'})
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
	}))
	defer srv.Close()
	p := NewPolicy(Options{IOTimeout: 200 * time.Millisecond, RetryFor: -1})
	hc := &http.Client{Transport: p.Transport(http.DefaultTransport)}
	get := func(path string) error {
		return p.Do(context.Background(), true, func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.ReadAll(resp.Body)
			return err
		}, func(error) Class { return Fatal })
	}
	start := time.Now()
	if err := get("/slow"); err != nil { // 600 ms in total, never 200 ms silent
		t.Fatalf("slow but moving body: %v", err)
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Fatalf("slow body took %v", el)
	}
	err := get("/stall")
	var se *StallError
	if !errors.As(err, &se) || !errors.Is(err, chunkstore.ErrUnavailable) {
		t.Fatalf("stalled body: %v, want a StallError given up on", err)
	}
	if s := p.Stats(); s.Stalls != 1 {
		t.Errorf("stats %+v, want 1 stall", s)
	}
}
