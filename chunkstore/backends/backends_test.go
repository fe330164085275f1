package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/gcsstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

func TestIsRemote(t *testing.T) {
	for spec, want := range map[string]bool{
		"s3://b/p": true, "gs://b": true, "/mnt/ds": false, "ds": false, "S3://b": false, "s3:/b": false,
	} {
		if got := backends.IsRemote(spec); got != want {
			t.Errorf("IsRemote(%q) = %v", spec, got)
		}
	}
}

// TestOpen serves one local datastore directory three ways: directly, as a
// bucket through versitygw (plain copy), and via GCS (PBS 4 layout), and
// reads the same chunk from each.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	d, blob := storetest.Chunk(t, []byte("hello datastore"))
	root := t.TempDir()
	ds := filepath.Join(root, "bucket", "store")
	for rel, data := range map[string][]byte{
		chunkstore.ChunkRelPath(d):                    blob,
		"vm/100/2026-11-29T10:00:00Z/index.json.blob": []byte("m"),
	} {
		p := filepath.Join(ds, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s3srv := testenv.StartS3Dir(t, root)
	s3srv.AdoptFiles(t)
	gcs := testenv.StartGCS(t, "gbucket")
	gcs.Server.CreateObject(fakeObject("gbucket", "x/.chunks/"+chunkstore.ChunkRelPath(d)[len(".chunks/"):], blob))
	gcs.Server.CreateObject(fakeObject("gbucket", "x/.cnt/vm/1/owner", []byte("root@pam\n")))

	common := backends.Options{Concurrency: 8, Policy: bucket.Options{RetryFor: 200 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}}
	for _, tc := range []struct {
		spec   string
		opts   func(o *backends.Options)
		layout backends.Layout
		remote bool
	}{
		{ds, nil, backends.LayoutAuto, false},
		{"s3://bucket/store", func(o *backends.Options) {
			o.S3 = s3store.Options{Endpoint: s3srv.Endpoint, Region: s3srv.Region,
				Credentials: credentials.NewStaticCredentialsProvider(s3srv.AccessKey, s3srv.SecretKey, "")}
		}, backends.LayoutPlain, true},
		{"gs://gbucket/x", func(o *backends.Options) {
			o.GCS = gcsstore.Options{Endpoint: gcs.URL, NoAuth: true}
		}, backends.LayoutPBS4, true},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			o := common
			if tc.opts != nil {
				tc.opts(&o)
			}
			s, err := backends.Open(ctx, tc.spec, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if l, ok := backends.LayoutOf(s); ok != tc.remote || l != tc.layout {
				t.Errorf("LayoutOf = %v, %v", l, ok)
			}
			got, err := s.ReadChunk(ctx, d, nil, 0)
			if err != nil || string(got) != string(blob) {
				t.Fatalf("ReadChunk: %v", err)
			}
			if backends.RetriesOf(s) != 0 {
				t.Errorf("unexpected retries")
			}
		})
	}
	if _, err := backends.Open(ctx, filepath.Join(root, "missing"), common); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("missing local datastore: %v", err)
	}
	if _, err := backends.Open(ctx, "s3://", common); err == nil {
		t.Errorf("s3:// without bucket accepted")
	}
}

func fakeObject(bucket, name string, data []byte) fakestorage.Object {
	return fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: data}
}
