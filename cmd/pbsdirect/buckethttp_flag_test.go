package main

import (
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBucketHTTPFlagValues: --bucket-http takes only the documented values
// auto, 1.1 and 2; any other spelling (HTTP/2, h2, 1, AUTO, " 2", empty)
// is a usage error (exit 2) naming the flag, on any store.
func TestBucketHTTPFlagValues(t *testing.T) {
	store := fixture.NewStore(t)
	for _, c := range []struct {
		val  string
		code int
	}{
		{"auto", 0}, {"1.1", 0}, {"2", 0},
		{"HTTP/2", 2}, {"h2", 2}, {"1", 2}, {"HTTP/1.1", 2}, {"AUTO", 2}, {" 2", 2}, {"", 2},
	} {
		r := pbs(t, "snapshots", "--store", store, "--bucket-http", c.val)
		if r.code != c.code {
			t.Errorf("--bucket-http %q: exit %d, want %d: %v", c.val, r.code, c.code, r)
		}
		if c.code == 2 && !strings.Contains(r.err, "--bucket-http") {
			t.Errorf("--bucket-http %q: the error does not name the flag: %v", c.val, r)
		}
	}
}
