package bucket

import (
	"net/http"
	"strings"
	"testing"
)

// TestDescribeRequest: a retry note names the request in this program's
// words: a chunk by its digest's first 12 hex digits, a listing by its
// prefix, any other object by its name with nothing but safe characters
// (an object name from a hostile listing cannot put escapes on a terminal).
func TestDescribeRequest(t *testing.T) {
	hex64 := strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct{ method, url, want string }{
		{"GET", "http://h/bkt/store/.chunks/0123/" + hex64, "GET chunk 0123456789ab…"},
		{"GET", "http://h/bkt?list-type=2&prefix=store%2F.cnt%2F", "LIST store/.cnt/"},
		{"GET", "http://h/storage/v1/b/bkt/o?prefix=s%2Fvm%2F", "LIST s/vm/"},
		{"GET", "http://h/bkt/store/vm/100/x/index.json.blob", "GET index.json.blob"},
		{"HEAD", "http://h/bkt/store/a%1b%5B31mred", "HEAD a??31mred"},
	} {
		req, err := http.NewRequest(c.method, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := describeRequest(req); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.url, got, c.want)
		}
	}
}
