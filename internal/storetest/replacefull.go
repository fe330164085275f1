package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// replaceNoFreeBadName checks that ReplaceChunk never overwrites a .bad
// copy: with "<digest>.0.bad" to ".9.bad" all taken it fails with
// ErrNoFreeBadName, and every .bad copy and the damaged chunk are left as
// they were.
func replaceNoFreeBadName(t *testing.T, h Harness) {
	ctx := context.Background()
	bkt := h.NewBucket(t)
	s := h.Open(t, bkt, "store", true)
	d, blob := Chunk(t, Noise(10000, 4))
	bad := bytes.Clone(blob)
	bad[len(bad)/2] ^= 1
	key := "store/" + chunkstore.ChunkRelPath(d)
	h.Put(t, bkt, key, bad)
	for n := range chunkstore.MaxBadGenerations {
		h.Put(t, bkt, fmt.Sprintf("%s.%d.bad", key, n), []byte(fmt.Sprintf("copy %d", n)))
	}
	aside, err := s.(chunkstore.ChunkReplacer).ReplaceChunk(ctx, d, bad, blob)
	if !errors.Is(err, chunkstore.ErrNoFreeBadName) || aside != "" {
		t.Fatalf("ReplaceChunk with every .bad name taken: %q, %v; want ErrNoFreeBadName", aside, err)
	}
	for n := range chunkstore.MaxBadGenerations {
		name := fmt.Sprintf("%s.%d.bad", key, n)
		if got, ok := h.Get(t, bkt, name); !ok || string(got) != fmt.Sprintf("copy %d", n) {
			t.Errorf("%s: %q (%v), want it left as it was", name, got, ok)
		}
	}
	if got, ok := h.Get(t, bkt, key); !ok || !bytes.Equal(got, bad) {
		t.Errorf("the chunk: %d bytes (%v), want the damaged copy left in place", len(got), ok)
	}
}
