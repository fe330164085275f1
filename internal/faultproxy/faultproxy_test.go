package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
