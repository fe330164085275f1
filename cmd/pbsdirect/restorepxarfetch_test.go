package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestRestorePxarFetchesOnce: extracting a directory backup in chunks of
// several MiB (the content-defined chunker's, as proxmox-backup-client
// cuts them) with 32 fetchers fetches every chunk once, legacy and split
// (the report's count is the distinct chunks of the archive's streams),
// as with 4 fetchers. With chunks this large the 32 fetchers' buffers
// alone exceed the reader's cache budget.
func TestRestorePxarFetchesOnce(t *testing.T) {
	fixture.SkipIfShort(t)
	src := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "a"), 0o755))
	files := map[string][]byte{
		"a/r1": fixture.Build(21, fixture.Region{Kind: fixture.Random, Len: 20 << 20}),
		"r2":   fixture.Build(22, fixture.Region{Kind: fixture.Random, Len: 9 << 20}),
	}
	for i := range 20 {
		files[fmt.Sprintf("a/f%d", i)] = fmt.Appendf(nil, "file %d\n", i)
	}
	for name, data := range files {
		must(os.WriteFile(filepath.Join(src, name), data, 0o644))
	}
	store := fixture.NewStore(t)
	for i, format := range []string{"legacy", "split"} {
		t.Run(format, func(t *testing.T) {
			at := fmt.Sprintf("2026-12-01T10:0%d:00Z", i)
			mustOK(t, "backup", "--store", store, "--backup-type", "host", "--backup-id", "h", "--backup-time", at, "--pxar-format", format, "root.pxar:"+src)
			snap := "host/h/" + at
			s, err := index.ParseSnapshotRef(snap)
			must(err)
			distinct := map[crypto.Digest]bool{}
			var largest uint64
			for _, name := range []string{"root.pxar.didx", "root.mpxar.didx", "root.ppxar.didx"} {
				raw, err := os.ReadFile(fixture.SnapPath(store, s, name))
				if os.IsNotExist(err) {
					continue
				}
				must(err)
				x, err := index.ParseDynamic(raw)
				must(err)
				start := uint64(0)
				for _, e := range x.Entries {
					distinct[e.Digest] = true
					largest = max(largest, e.End-start)
					start = e.End
				}
			}
			// The condition the test is about: 32 buffers of the largest
			// chunk do not fit the default cache budget.
			if 32*largest < archive.DefaultCacheSize {
				t.Fatalf("largest chunk %d bytes: too small for this test", largest)
			}
			for _, fetchers := range []int{4, 32} {
				dir := t.TempDir()
				rep := pxRestore(t, "--store", store, "--fetchers", fmt.Sprint(fetchers), snap, "root.pxar", dir)
				if int(rep.ChunksFetched) != len(distinct) {
					t.Errorf("--fetchers %d: %d chunks fetched, the archive has %d distinct chunks", fetchers, rep.ChunksFetched, len(distinct))
				}
				for name, want := range files {
					if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
						t.Errorf("--fetchers %d: %s not extracted as backed up: %v", fetchers, name, err)
					}
				}
			}
		})
	}
}
