package gcsstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/klauspost/compress/gzip"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/quirkproxy"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestQuirks reads through quirkproxy in front of fake-gcs-server: a
// listing whose page token the server ignores (two pages of 1000), chunk
// and file downloads without Content-Length or gzip-encoded, and objects
// uploaded gzip-compressed (Content-Encoding: gzip, as gsutil cp -Z does).
func TestQuirks(t *testing.T) {
	srv := testenv.StartGCS(t)
	f := newFixture(t, srv)
	for i := range 1210 {
		put(srv, f.bucket, fmt.Sprintf("store/.cnt/vm/%04d/2026-11-29T10:00:00Z/index.json.blob", i), []byte("x"))
	}
	// A compressed upload of a second chunk.
	d2, blob2 := storetest.Chunk(t, storetest.Noise(300<<10, 9))
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(blob2)
	zw.Close()
	srv.Server.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: f.bucket, Name: "store/" + chunkstore.ChunkRelPath(d2), ContentEncoding: "gzip"},
		Content:     zb.Bytes(),
	})
	for _, tc := range []struct {
		name string
		q    quirkproxy.Quirks
	}{
		{"by-the-book", quirkproxy.Quirks{}},
		{"token-ignored", quirkproxy.Quirks{IgnoreToken: true}},
		{"chunked", quirkproxy.Quirks{ChunkedObjects: true}},
		{"gzip", quirkproxy.Quirks{GzipObjects: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := quirkproxy.Start(srv.URL, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s := open(t, f.bucket, "store", testOptions(p.URL))
			ctx := context.Background()
			files, err := s.ListFiles(ctx, "vm")
			if err != nil || len(files) != 1211 {
				t.Fatalf("ListFiles: %d files, %v; want 1211", len(files), err)
			}
			if n := p.Lists(); n > 6 {
				t.Errorf("%d listing requests", n)
			}
			for d, want := range map[[32]byte][]byte{f.digest: f.blob, d2: blob2} {
				got, err := s.ReadChunk(ctx, d, nil, 0)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("ReadChunk: %d bytes, %v; want %d bytes", len(got), err, len(want))
				}
			}
			got, err := chunkstore.ReadFile(ctx, s, "vm/0001/2026-11-29T10:00:00Z/index.json.blob")
			if err != nil || string(got) != "x" {
				t.Fatalf("ReadFile: %q, %v", got, err)
			}
			r, _, err := s.OpenFile(ctx, fileRel)
			if err != nil {
				t.Fatal(err)
			}
			all, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(all, f.file) {
				t.Fatalf("OpenFile: %d bytes, %v", len(all), err)
			}
			if (tc.q.GzipObjects || tc.q.ChunkedObjects) && p.ObjectGets() == 0 {
				t.Errorf("no download went through the proxy's recoding")
			}
		})
	}
}
