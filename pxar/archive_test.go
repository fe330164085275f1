package pxar_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// storeDynamic cuts data into chunks of 4–80 KiB, stores them and adds
// a dynamic index name to the snapshot; it returns the chunk digests.
func storeDynamic(t *testing.T, dir string, snap index.Snapshot, name string, data []byte, rng *rand.Rand) []crypto.Digest {
	var entries []index.DynamicEntry
	var digests []crypto.Digest
	for pos := 0; pos < len(data); {
		end := min(len(data), pos+4096+rng.IntN(76<<10))
		p := data[pos:end]
		d := (*crypto.Config)(nil).ChunkDigest(p)
		cp := fixture.ChunkPath(dir, d)
		if err := os.MkdirAll(filepath.Dir(cp), 0o755); err != nil {
			t.Fatal(err)
		}
		fixture.WriteFile(t, filepath.Dir(cp), filepath.Base(cp), fixture.Encode(t, p, nil, true))
		entries = append(entries, index.DynamicEntry{End: uint64(end), Digest: d})
		digests = append(digests, d)
		pos = end
	}
	raw, err := index.BuildDynamic(index.DynamicHeader{}, entries)
	if err != nil {
		t.Fatal(err)
	}
	fixture.WriteFile(t, filepath.Dir(fixture.SnapPath(dir, snap, "x")), name, raw)
	x, _ := index.ParseDynamic(raw)
	fixture.RewriteManifest(t, dir, snap, func(m *index.Manifest) {
		m.Files = append(m.Files, index.FileInfo{Filename: name, CryptMode: index.CryptNone, Size: uint64(len(data)), Csum: x.Csum})
	})
	return digests
}

// TestOverArchiveReader decodes a split archive through archive.Reader
// over dynamic indexes, its files spanning many chunks, and checks that a
// damaged payload chunk surfaces as the reader's error, not as a
// malformed archive.
func TestOverArchiveReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	big := make([]byte, 3<<20+5)
	for i := range big {
		big[i] = byte(rng.IntN(5))
	}
	root := &pxar.Node{Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755}}
	root.Children = append(root.Children, &pxar.Node{Name: "big", Kind: pxar.KindFile, Data: big})
	for i := range 300 {
		root.Children = append(root.Children, &pxar.Node{Name: fmt.Sprint("small ", i), Kind: pxar.KindFile, Data: bytes.Repeat([]byte{byte(i)}, i*37)})
	}
	var meta, payload bytes.Buffer
	if err := pxar.Encode(&meta, &payload, root); err != nil {
		t.Fatal(err)
	}

	dir := fixture.NewStore(t)
	snap := fixture.Snap(t, "", "host", "h", fixture.T0)
	img := fixture.WriteFile(t, t.TempDir(), "x.raw", []byte("x"))
	fixture.Backup(t, dir, snap, backup.Options{}, backup.Source{Name: "x.img", Path: img})
	storeDynamic(t, dir, snap, "root.mpxar.didx", meta.Bytes(), rng)
	pd := storeDynamic(t, dir, snap, "root.ppxar.didx", payload.Bytes(), rng)
	if len(pd) < 20 {
		t.Fatalf("only %d payload chunks", len(pd))
	}
	openBoth := func() *pxar.Archive {
		m := fixture.Manifest(t, dir, snap)
		mr, err := archive.Open(context.Background(), fixture.OpenStore(t, dir), snap.Dir(), m, "root.mpxar.didx", nil, archive.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mr.Close() })
		pr, err := archive.Open(context.Background(), fixture.OpenStore(t, dir), snap.Dir(), m, "root.ppxar.didx", nil, archive.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pr.Close() })
		a, err := pxar.Open(mr, mr.Size(), pr, pr.Size())
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := openBoth()
	n := 0
	err := a.Walk(func(e *pxar.Entry) error {
		if e.Kind != pxar.KindFile {
			return nil
		}
		n++
		r, err := e.Open()
		if err != nil {
			return err
		}
		got, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		want := big
		if e.Name != "big" {
			var i int
			fmt.Sscanf(e.Name, "small %d", &i)
			want = bytes.Repeat([]byte{byte(i)}, i*37)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%q: content differs", e.Path)
		}
		return nil
	})
	if err != nil || n != 301 {
		t.Fatalf("walk: %d files, %v", n, err)
	}

	// Damage a payload chunk in the middle of "big".
	cp := fixture.ChunkPath(dir, pd[len(pd)/2])
	if err := os.WriteFile(cp, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	a = openBoth()
	e, err := a.LookupPath("big")
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Open()
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	var pe *pxar.Error
	if !errors.As(err, &pe) || errors.Is(err, pxar.ErrFormat) || pe.Path != "big" || pe.Stream != pxar.StreamPayload || pe.Offset <= 0 {
		t.Fatalf("damaged chunk: %v, want the reader's error with the path", err)
	}
	t.Logf("damaged chunk: %v", err)
}
