package backends_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestLeftOutProvesNothingMissing: a chain whose second store was left
// out when opened (its listing refused with 403 or 400 ExpiredToken, its
// endpoint refusing connections, a directory that is not there or holds
// no datastore) still serves what the first holds, but a chunk or file the
// first lacks is not proven missing (it may be in the store left out): the
// error is outside the data (exit 3), never Missing. With every store
// there, the same chunk is missing.
func TestLeftOutProvesNothingMissing(t *testing.T) {
	ctx := context.Background()
	have, haveBlob := storetest.Chunk(t, []byte("in the local copy"))
	lacks, lacksBlob := storetest.Chunk(t, []byte("only in the bucket"))
	root := t.TempDir()
	local := filepath.Join(root, "local")
	put := func(ds, rel string, data []byte) {
		p := filepath.Join(ds, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(local, chunkstore.ChunkRelPath(have), haveBlob)
	ds := filepath.Join(root, "s3", "pbs", "store")
	put(ds, chunkstore.ChunkRelPath(have), haveBlob)
	put(ds, chunkstore.ChunkRelPath(lacks), lacksBlob)
	srv := testenv.StartS3Dir(t, filepath.Join(root, "s3"))
	srv.AdoptFiles(t)
	p, err := faultproxy.Start("127.0.0.1:0", srv.Endpoint, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)

	s3opts := func(endpoint string) backends.Options {
		return backends.Options{Concurrency: 4, Policy: bucket.Options{RetryFor: 100 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
			S3: s3store.Options{Endpoint: endpoint, Region: srv.Region, Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")}}
	}
	for _, tc := range []struct {
		name     string
		second   string
		rule     *faultproxy.Rule
		endpoint string
		leftOut  bool
	}{
		{"all there", "s3://pbs/store", nil, p.URL, false},
		{"listing 403", "s3://pbs/store", &faultproxy.Rule{Method: "GET", Status: 403}, p.URL, true},
		{"listing ExpiredToken", "s3://pbs/store", &faultproxy.Rule{Method: "GET", Status: 400, Code: "ExpiredToken"}, p.URL, true},
		{"connection refused", "s3://pbs/store", nil, "http://127.0.0.1:1", true},
		{"directory not there", filepath.Join(root, "nonexistent"), nil, p.URL, true},
		{"directory without datastore", empty, nil, p.URL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rule != nil {
				p.SetRules(*tc.rule)
			} else {
				p.SetRules()
			}
			var skipped []string
			c, err := backends.OpenChain(ctx, []string{local, tc.second}, s3opts(tc.endpoint), func(spec string, err error) { skipped = append(skipped, spec) })
			if err != nil {
				t.Fatalf("OpenChain: %v", err)
			}
			defer c.Close()
			p.SetRules() // the store left out stays out
			if (len(skipped) == 1) != tc.leftOut {
				t.Fatalf("left out %v, want left out %v", skipped, tc.leftOut)
			}
			if _, err := c.ReadChunk(ctx, have, nil, 0); err != nil {
				t.Fatalf("ReadChunk of a chunk the first store holds: %v", err)
			}
			if !tc.leftOut {
				return
			}
			_, err = c.ReadChunk(ctx, lacks, nil, 0)
			if chunkstore.Missing(err) || chunkstore.Proven(err) || !chunkstore.Outside(err) {
				t.Errorf("ReadChunk of a chunk only the store left out may hold: %v: proven missing", err)
			}
			_, err = c.StatChunk(ctx, lacks)
			if chunkstore.Proven(err) || !chunkstore.Outside(err) {
				t.Errorf("StatChunk: %v: proven missing", err)
			}
			_, _, err = c.OpenFile(ctx, "vm/100/2026-11-29T10:00:00Z/index.json.blob")
			if chunkstore.Proven(err) || !chunkstore.Outside(err) {
				t.Errorf("OpenFile: %v: proven missing", err)
			}
		})
	}
	// The control: without the chain's second store, the chunk is missing.
	c, err := backends.OpenChain(ctx, []string{local, local}, backends.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ReadChunk(ctx, lacks, nil, 0); !chunkstore.Missing(err) {
		t.Errorf("ReadChunk from stores that all answered: %v, want missing", err)
	}
	// No store there at all: outside the data (exit 3), not missing.
	if _, err := backends.OpenChain(ctx, []string{empty, filepath.Join(root, "nonexistent")}, backends.Options{}, nil); err == nil || chunkstore.Missing(err) || !chunkstore.Outside(err) {
		t.Errorf("OpenChain of stores none of which is there: %v, want an error outside the data", err)
	}
}
