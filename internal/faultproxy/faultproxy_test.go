package faultproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProxy(t *testing.T) {
	body := strings.Repeat("x", 100000)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" {
			t.Errorf("no Host header")
		}
		io.WriteString(w, body)
	}))
	defer target.Close()
	p, err := Start("127.0.0.1:0", target.URL, 0,
		Rule{Method: "GET", PathContains: "/fail", Every: 2, Status: 503},
		Rule{PathContains: "/reset", Times: 1, Reset: true, ResetAfter: 10},
		Rule{PathContains: "/slow", Times: 1, Delay: 100 * time.Millisecond},
		Rule{PathContains: "/count"},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(path string) (int, string, error) {
		resp, err := http.Get(p.URL + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	for i, want := range []int{200, 503, 200, 503} {
		if st, _, err := get("/fail"); err != nil || st != want {
			t.Errorf("/fail #%d: %d %v, want %d", i, st, err, want)
		}
	}
	if _, b, err := get("/reset"); err == nil {
		t.Errorf("/reset: no error, got %d bytes", len(b))
	}
	if st, b, err := get("/reset"); err != nil || st != 200 || b != body {
		t.Errorf("/reset second time: %d %v", st, err)
	}
	start := time.Now()
	get("/slow")
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("/slow took %v", el)
	}
	// The second is not delayed (Times: 1): the rule did not act on it, as
	// its count shows whatever the machine's speed.
	get("/slow")
	if a := p.Acted()[2]; a != 1 {
		t.Errorf("/slow delayed %d times, want 1 (Times: 1)", a)
	}
	get("/count")
	get("/count")
	if m := p.Matched(); m[0] != 4 || m[1] != 2 || m[2] != 2 || m[3] != 2 {
		t.Errorf("Matched = %v", m)
	}
	if p.Requests() != 10 || p.Faults() != 3 {
		t.Errorf("Requests %d Faults %d", p.Requests(), p.Faults())
	}
}

// TestPeakInFlight checks the count of requests handled at once: n requests
// held at the target together give a peak of n, requests one after another
// a peak of 1.
func TestPeakInFlight(t *testing.T) {
	const n = 5
	var arrived sync.WaitGroup
	arrived.Add(n)
	hold := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived.Done()
			<-hold
		}
		io.WriteString(w, "ok")
	}))
	defer target.Close()
	for _, tc := range []struct {
		name string
		path string
		want int64
	}{{"serial", "/", 1}, {"together", "/hold", n}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start("127.0.0.1:0", target.URL, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			get := func() {
				resp, err := http.Get(p.URL + tc.path)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if tc.want == 1 {
				for range n {
					get()
				}
			} else {
				var wg sync.WaitGroup
				for range n {
					wg.Add(1)
					go func() { defer wg.Done(); get() }()
				}
				arrived.Wait() // all n are at the target, so in the proxy
				close(hold)
				wg.Wait()
			}
			if got := p.PeakInFlight(); got != tc.want {
				t.Errorf("PeakInFlight = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAbandoned checks that a request the client gives up on during its
// delay is counted, and one that waits its delay out is not.
func TestAbandoned(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer target.Close()
	p, err := Start("127.0.0.1:0", target.URL, 0,
		Rule{PathContains: "/long", Delay: time.Hour},
		Rule{PathContains: "/short", Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if resp, err := http.Get(p.URL + "/short"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if got := p.Abandoned(); got != 0 {
		t.Fatalf("Abandoned = %d after a request that waited its delay out", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", p.URL+"/long", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Give up once the proxy holds the request; the proxy notices the
	// closed connection soon after. The loops end on the counts, the
	// deadline (far below the hour's delay) only guards against a hang.
	deadline := time.Now().Add(time.Minute)
	for p.Acted()[0] == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the held request succeeded")
	}
	for p.Abandoned() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := p.Abandoned(); got != 1 {
		t.Errorf("Abandoned = %d, want 1", got)
	}
}
