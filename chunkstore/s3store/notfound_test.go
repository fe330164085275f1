package s3store_test

import (
	"context"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestOnlyNoSuchKeyIsMissing: of the 404s a chunk read or a presence check
// (HEAD) can meet, only S3's NoSuchKey proves the chunk missing; a
// NoSuchBucket (the bucket deleted under a run), a code-less HTML 404 from
// an ingress and a HEAD's 404 that a GET does not confirm as NoSuchKey
// prove nothing (outside the data, exit 3).
func TestOnlyNoSuchKeyIsMissing(t *testing.T) {
	srv := testenv.StartS3(t)
	const html = "<html>404 Not Found (default backend)</html>"
	type op func(s chunkstoreStatter, d [32]byte) error
	read := func(s chunkstoreStatter, d [32]byte) error {
		_, err := s.ReadChunk(context.Background(), d, nil, 0)
		return err
	}
	stat := func(s chunkstoreStatter, d [32]byte) error {
		_, err := s.StatChunk(context.Background(), d)
		return err
	}
	for _, tc := range []struct {
		name    string
		rules   []faultproxy.Rule
		op      op
		present bool // the chunk is in the bucket
		want    string
	}{
		{"read/NoSuchKey", nil, read, false, "missing"},
		{"read/NoSuchBucket", []faultproxy.Rule{{Method: "GET", PathContains: "/.chunks/", Status: 404, Code: "NoSuchBucket"}}, read, true, "outside"},
		{"read/html 404", []faultproxy.Rule{{Method: "GET", PathContains: "/.chunks/", Status: 404, Body: html}}, read, true, "outside"},
		{"read/unknown code 404", []faultproxy.Rule{{Method: "GET", PathContains: "/.chunks/", Status: 404, Code: "NotFound"}}, read, true, "outside"},
		{"stat/NoSuchKey", nil, stat, false, "missing"},
		{"stat/there", nil, stat, true, "ok"},
		{"stat/HEAD 404, GET finds it", []faultproxy.Rule{{Method: "HEAD", PathContains: "/.chunks/", Status: 404, Body: html}}, stat, true, "ok"},
		{"stat/HEAD 404, GET NoSuchBucket", []faultproxy.Rule{{Method: "HEAD", PathContains: "/.chunks/", Status: 404}, {Method: "GET", PathContains: "/.chunks/", Status: 404, Code: "NoSuchBucket"}}, stat, false, "outside"},
		{"stat/HEAD 404, GET html 404", []faultproxy.Rule{{Method: "HEAD", PathContains: "/.chunks/", Status: 404}, {Method: "GET", PathContains: "/.chunks/", Status: 404, Body: html}}, stat, false, "outside"},
		{"stat/HEAD 403", []faultproxy.Rule{{Method: "HEAD", PathContains: "/.chunks/", Status: 403}}, stat, true, "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, srv)
			s := f.open(t)
			f.proxy.SetRules(tc.rules...)
			d := [32]byte{7}
			if tc.present {
				d = f.digest
			}
			err := tc.op(s, d)
			got := "other"
			switch {
			case err == nil:
				got = "ok"
			case chunkstore.Missing(err):
				got = "missing"
			case chunkstore.Outside(err) && !chunkstore.Proven(err):
				got = "outside"
			}
			if got != tc.want {
				t.Fatalf("err = %v: %s, want %s", err, got, tc.want)
			}
		})
	}
}

// chunkstoreStatter is what TestOnlyNoSuchKeyIsMissing calls.
type chunkstoreStatter interface {
	chunkstore.Store
	chunkstore.ChunkStatter
}
