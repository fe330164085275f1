package quirkproxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestQuirks checks each quirk against a stand-in S3 server: listings with a
// continuation token per page, objects with Content-Length.
func TestQuirks(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") == "2" {
			tok := r.URL.Query().Get("continuation-token")
			fmt.Fprintf(w, "<ListBucketResult><IsTruncated>true</IsTruncated><Key>page-%s</Key><NextContinuationToken>next-%s</NextContinuationToken></ListBucketResult>", tok, tok)
			return
		}
		w.Header().Set("Content-Length", "6")
		io.WriteString(w, "object")
	}))
	defer target.Close()
	get := func(t *testing.T, p *Proxy, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, p.URL+path, nil)
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	start := func(t *testing.T, q Quirks) *Proxy {
		p, err := Start(target.URL, q)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	t.Run("url-encode-keys", func(t *testing.T) {
		_, b := get(t, start(t, Quirks{URLEncodeKeys: true}), "/b?list-type=2&prefix=x&continuation-token=a:b")
		if !strings.Contains(b, "<ListBucketResult><EncodingType>url</EncodingType>") || !strings.Contains(b, "<Key>page-a%3Ab</Key>") {
			t.Errorf("listing: %s", b)
		}
	})
	t.Run("strip-token", func(t *testing.T) {
		_, b := get(t, start(t, Quirks{StripToken: true}), "/b?list-type=2&prefix=x")
		if strings.Contains(b, "NextContinuationToken") || !strings.Contains(b, "<IsTruncated>true") {
			t.Errorf("listing: %s", b)
		}
	})
	t.Run("ignore-token", func(t *testing.T) {
		p := start(t, Quirks{IgnoreToken: true})
		_, first := get(t, p, "/b?list-type=2&prefix=x")
		_, again := get(t, p, "/b?list-type=2&prefix=x&continuation-token=next-")
		if again != first || p.Injected() != 1 {
			t.Errorf("second page %q, want the first %q again", again, first)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		resp, b := get(t, start(t, Quirks{GzipObjects: true}), "/b/k?x-id=GetObject")
		if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength != -1 {
			t.Fatalf("headers: %v, length %d", resp.Header, resp.ContentLength)
		}
		zr, err := gzip.NewReader(strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if plain, _ := io.ReadAll(zr); string(plain) != "object" {
			t.Errorf("decoded %q", plain)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		resp, b := get(t, start(t, Quirks{ChunkedObjects: true, OnlyChunks: true}), "/b/ds/.chunks/abcd/abcdef")
		if resp.ContentLength != -1 || b != "object" {
			t.Errorf("length %d, body %q", resp.ContentLength, b)
		}
		resp, _ = get(t, start(t, Quirks{ChunkedObjects: true, OnlyChunks: true}), "/b/ds/.cnt/x")
		if resp.ContentLength != 6 {
			t.Errorf("content file: length %d, want 6 (only chunks are recoded)", resp.ContentLength)
		}
	})
	t.Run("vanish", func(t *testing.T) {
		p := start(t, Quirks{Vanish: "ds/gone/", VanishAfterReads: 1})
		for i, want := range []int{200, 404, 404} {
			if resp, _ := get(t, p, "/b/ds/gone/file"); resp.StatusCode != want {
				t.Errorf("read %d: status %d, want %d", i+1, resp.StatusCode, want)
			}
		}
		if resp, _ := get(t, p, "/b/ds/kept/file"); resp.StatusCode != 200 {
			t.Errorf("other object: %d", resp.StatusCode)
		}
	})
}
