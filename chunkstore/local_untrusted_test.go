package chunkstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// newLocal creates a datastore with one chunk and one snapshot file and
// returns its directory, the chunk's digest and blob.
func newLocal(t *testing.T) (string, crypto.Digest, []byte) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	// With its last prefix directory present, OpenLocal(create) takes the
	// datastore as made and creates prefix directories only as written.
	if err := os.MkdirAll(filepath.Join(root, ".chunks", "ffff"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := chunkstore.OpenLocal(root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	data := bytes.Repeat([]byte("chunk"), 1000)
	blob, err := enc.Encode(data, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	d := (*crypto.Config)(nil).ChunkDigest(data)
	ctx := context.Background()
	if _, err := s.WriteChunk(ctx, d, blob); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(ctx, "vm/100/2026-11-29T10:00:00Z/index.json.blob", []byte("manifest")); err != nil {
		t.Fatal(err)
	}
	return root, d, blob
}

// TestLocalLimit: a chunk file larger than the read's limit is refused by
// its size, naming the file, without being read: a 128 MiB sparse file
// costs no memory.
func TestLocalLimit(t *testing.T) {
	root, d, blob := newLocal(t)
	s, err := chunkstore.OpenLocal(root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if got, err := s.ReadChunk(ctx, d, nil, len(blob)); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("at the limit: %v", err)
	}
	_, err = s.ReadChunk(ctx, d, nil, len(blob)-1)
	if !errors.Is(err, chunkstore.ErrTooLarge) || !strings.Contains(err.Error(), s.ChunkLocation(d)) || !strings.Contains(err.Error(), fmt.Sprintf("file is %d bytes", len(blob))) {
		t.Errorf("over the limit: %v", err)
	}
	if err := os.Truncate(s.ChunkLocation(d), 128<<20); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, 4 << 20} {
		if _, err := s.ReadChunk(ctx, d, nil, limit); (limit == 0) != (err == nil) {
			t.Errorf("128 MiB chunk file, limit %d: %v", limit, err)
		}
	}
}

// TestLocalSymlinks: below the datastore directory and its .chunks
// directory, no symbolic link is followed, for reads or writes; links to
// the datastore itself or to its .chunks directory (moved to another disk)
// work.
func TestLocalSymlinks(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("secret bytes"), 0o600)
	const snapDir = "vm/100/2026-11-29T10:00:00Z"
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, root string, d crypto.Digest)
		try   func(s *chunkstore.Local, d crypto.Digest) error
	}{
		{"chunk file", func(t *testing.T, root string, d crypto.Digest) {
			p := filepath.Join(root, chunkstore.ChunkRelPath(d))
			os.Rename(p, filepath.Join(outside, "chunk"))
			os.Symlink(filepath.Join(outside, "chunk"), p)
		}, func(s *chunkstore.Local, d crypto.Digest) error { _, err := s.ReadChunk(ctx, d, nil, 0); return err }},
		{"chunk prefix directory, read", func(t *testing.T, root string, d crypto.Digest) {
			p := filepath.Dir(filepath.Join(root, chunkstore.ChunkRelPath(d)))
			os.Rename(p, filepath.Join(outside, "prefix"))
			os.Symlink(filepath.Join(outside, "prefix"), p)
		}, func(s *chunkstore.Local, d crypto.Digest) error { _, err := s.ReadChunk(ctx, d, nil, 0); return err }},
		{"chunk prefix directory, write", func(t *testing.T, root string, d crypto.Digest) {
			p := filepath.Dir(filepath.Join(root, chunkstore.ChunkRelPath(d)))
			os.RemoveAll(p)
			os.Symlink(outside, p)
		}, func(s *chunkstore.Local, d crypto.Digest) error {
			_, err := s.WriteChunk(ctx, d, []byte("x"))
			return err
		}},
		{"snapshot file", func(t *testing.T, root string, d crypto.Digest) {
			p := filepath.Join(root, snapDir, "index.json.blob")
			os.Remove(p)
			os.Symlink(secret, p)
		}, func(s *chunkstore.Local, d crypto.Digest) error {
			_, err := chunkstore.ReadFile(ctx, s, snapDir+"/index.json.blob")
			return err
		}},
		{"group directory, read", func(t *testing.T, root string, d crypto.Digest) {
			os.Rename(filepath.Join(root, "vm/100"), filepath.Join(outside, "100"))
			os.Symlink(filepath.Join(outside, "100"), filepath.Join(root, "vm/100"))
		}, func(s *chunkstore.Local, d crypto.Digest) error {
			_, err := chunkstore.ReadFile(ctx, s, snapDir+"/index.json.blob")
			return err
		}},
		{"group directory, list", func(t *testing.T, root string, d crypto.Digest) {
			os.Rename(filepath.Join(root, "vm/100"), filepath.Join(outside, "100"))
			os.Symlink(filepath.Join(outside, "100"), filepath.Join(root, "vm/100"))
		}, func(s *chunkstore.Local, d crypto.Digest) error { _, err := s.ListFiles(ctx, "vm/100"); return err }},
		{"group directory, write", func(t *testing.T, root string, d crypto.Digest) {
			os.RemoveAll(filepath.Join(root, "vm/100"))
			os.Symlink(outside, filepath.Join(root, "vm/100"))
		}, func(s *chunkstore.Local, d crypto.Digest) error {
			return s.WriteFile(ctx, "vm/100/2026-11-30T10:00:00Z/index.json.blob", []byte("x"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, d, _ := newLocal(t)
			before := listDir(t, outside)
			c.plant(t, root, d)
			s, err := chunkstore.OpenLocal(root, true)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = c.try(s, d)
			if !errors.Is(err, chunkstore.ErrSymlink) || !strings.Contains(err.Error(), root) {
				t.Errorf("want ErrSymlink naming the path: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "secret bytes") {
				t.Errorf("error echoes the linked file: %v", err)
			}
			if after := listDir(t, outside); after != before && !strings.Contains(c.name, "read") && c.name != "chunk file" && c.name != "group directory, list" {
				t.Errorf("written outside the datastore: %s", after)
			}
			os.RemoveAll(outside)
			os.MkdirAll(outside, 0o755)
			os.WriteFile(secret, []byte("secret bytes"), 0o600)
		})
	}

	// A datastore reached through a link, and one whose .chunks directory
	// was moved to another disk and linked back, read and write as usual.
	root, d, blob := newLocal(t)
	other := t.TempDir()
	link := filepath.Join(other, "link-to-store")
	os.Symlink(root, link)
	moved := filepath.Join(other, "chunks-elsewhere")
	if err := os.Rename(filepath.Join(root, ".chunks"), moved); err != nil {
		t.Fatal(err)
	}
	os.Symlink(moved, filepath.Join(root, ".chunks"))
	for _, create := range []bool{false, true} {
		s, err := chunkstore.OpenLocal(link, create)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadChunk(ctx, d, nil, 0); err != nil || !bytes.Equal(got, blob) {
			t.Errorf("chunk through linked store and .chunks: %v", err)
		}
		if _, err := chunkstore.ReadFile(ctx, s, snapDir+"/index.json.blob"); err != nil {
			t.Errorf("file through linked store: %v", err)
		}
		if create {
			if existed, err := s.WriteChunk(ctx, crypto.Digest{1}, blob); err != nil || existed {
				t.Errorf("WriteChunk through linked .chunks: %v", err)
			}
			if err := s.WriteFile(ctx, "vm/101/2026-11-29T10:00:00Z/index.json.blob", []byte("m")); err != nil {
				t.Errorf("WriteFile through linked store: %v", err)
			}
		}
		s.Close()
	}
	if _, err := os.Stat(filepath.Join(moved, chunkstore.ChunkRelPath(crypto.Digest{1})[len(".chunks/"):])); err != nil {
		t.Errorf("chunk not written into the moved .chunks: %v", err)
	}
}

// listDir names everything below dir, for before/after comparisons.
func listDir(t *testing.T, dir string) string {
	var names []string
	filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil {
			names = append(names, p)
		}
		return nil
	})
	return strings.Join(names, " ")
}
