package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestDynamicArchive: a .didx archive (chunks of varying sizes, one used
// twice) restores to the exact stream; a missing or damaged chunk fails the
// restore with exit 1 naming the archive and the chunk, and leaves no
// target.
func TestDynamicArchive(t *testing.T) {
	pieces := [][]byte{
		fixture.Build(51, fixture.Region{Kind: fixture.Text, Len: 9000}),
		fixture.Build(52, fixture.Region{Kind: fixture.Random, Len: 20001}),
		fixture.Build(53, fixture.Region{Kind: fixture.Text, Len: 4096}),
	}
	order := []int{0, 1, 0, 2} // piece 0 used twice
	b := newBase(t, false)
	var digests []crypto.Digest
	for _, p := range pieces {
		d := (*crypto.Config)(nil).ChunkDigest(p)
		digests = append(digests, d)
		os.MkdirAll(filepath.Dir(fixture.ChunkPath(b.store, d)), 0o755)
		writeFile(t, fixture.ChunkPath(b.store, d), fixture.Encode(t, p, nil, true))
	}
	var want []byte
	var entries []index.DynamicEntry
	for _, i := range order {
		want = append(want, pieces[i]...)
		entries = append(entries, index.DynamicEntry{End: uint64(len(want)), Digest: digests[i]})
	}
	const name = "root.pxar.didx"
	fixture.RewriteManifest(t, b.store, b.snap, func(m *index.Manifest) {
		raw, err := index.BuildDynamic(index.DynamicHeader{}, entries)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, fixture.SnapPath(b.store, b.snap, name), raw)
		x, err := index.ParseDynamic(raw)
		if err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, index.FileInfo{Filename: name, CryptMode: index.CryptNone, Size: uint64(len(want)), Csum: x.Csum})
	})

	target := filepath.Join(t.TempDir(), "root.pxar")
	mustOK(t, "restore", "--format", "pxar", "--store", b.store, snap0, name, target)
	fixture.Equal(t, target, want)

	for _, c := range []struct {
		name   string
		damage func(t *testing.T, store string)
	}{
		{"missing-chunk", func(t *testing.T, store string) { remove(t, fixture.ChunkPath(store, digests[1])) }},
		{"damaged-chunk", func(t *testing.T, store string) { fixture.FlipByte(t, fixture.ChunkPath(store, digests[1]), -1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := b.clone(t)
			c.damage(t, bad.store)
			target := filepath.Join(t.TempDir(), "root.pxar")
			mustFail(t, 1, []string{name, digests[1].String()}, "restore", "--format", "pxar", "--store", bad.store, snap0, name, target)
			noFile(t, target)
		})
	}
}
