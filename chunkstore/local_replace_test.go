package chunkstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestLocalReplaceNoFreeBadName: ReplaceChunk of a directory never
// overwrites a .bad copy: with .0.bad to .9.bad all taken it fails with
// ErrNoFreeBadName and leaves the copies and the damaged chunk as they
// were; with one name free it takes that one.
func TestLocalReplaceNoFreeBadName(t *testing.T) {
	ctx := context.Background()
	root := fixture.NewStore(t)
	s, err := chunkstore.OpenLocal(root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := fixture.Build(11, fixture.Region{Kind: fixture.Random, Len: 4096})
	var nokey *crypto.Config
	d := nokey.ChunkDigest(data)
	blob := fixture.Encode(t, data, nil, true)
	bad := bytes.Clone(blob)
	bad[len(bad)/2] ^= 1
	if _, err := s.WriteChunk(ctx, d, bad); err != nil {
		t.Fatal(err)
	}
	chunk := fixture.ChunkPath(root, d)
	badPath := func(n int) string { return filepath.Join(filepath.Dir(chunk), chunkstore.BadName(d, n)) }
	for n := range chunkstore.MaxBadGenerations {
		if err := os.WriteFile(badPath(n), []byte(fmt.Sprintf("copy %d", n)), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	aside, err := s.ReplaceChunk(ctx, d, bad, blob)
	if !errors.Is(err, chunkstore.ErrNoFreeBadName) || aside != "" {
		t.Fatalf("ReplaceChunk with every .bad name taken: %q, %v; want ErrNoFreeBadName", aside, err)
	}
	for n := range chunkstore.MaxBadGenerations {
		if got, err := os.ReadFile(badPath(n)); err != nil || string(got) != fmt.Sprintf("copy %d", n) {
			t.Errorf("%s: %q, %v; want it left as it was", badPath(n), got, err)
		}
	}
	if got, err := os.ReadFile(chunk); err != nil || !bytes.Equal(got, bad) {
		t.Errorf("the chunk: %v; want the damaged copy left in place", err)
	}
	// One name free: taken.
	if err := os.Remove(badPath(4)); err != nil {
		t.Fatal(err)
	}
	aside, err = s.ReplaceChunk(ctx, d, bad, blob)
	if err != nil || aside != badPath(4) {
		t.Fatalf("ReplaceChunk with .4.bad free: %q, %v", aside, err)
	}
	if got, err := os.ReadFile(chunk); err != nil || !bytes.Equal(got, blob) {
		t.Errorf("the chunk after ReplaceChunk: %v", err)
	}
}
