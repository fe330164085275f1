package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// replaceDamaged checks StatChunk and ReplaceChunk: a missing chunk's stat
// wraps ErrNotFound, a stored one's gives its size; replacing keeps each
// damaged copy as "<digest>.N.bad" (N 0, 1, …) next to the chunk and leaves
// the new blob in its place.
func replaceDamaged(t *testing.T, h Harness) {
	ctx := context.Background()
	bkt := h.NewBucket(t)
	s := h.Open(t, bkt, "store", true)
	d, blob := Chunk(t, Noise(10000, 3))
	if _, err := s.(chunkstore.ChunkStatter).StatChunk(ctx, d); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Fatalf("StatChunk of a missing chunk: %v, want ErrNotFound", err)
	}
	bad := bytes.Clone(blob)
	bad[len(bad)/2] ^= 1
	key := "store/" + chunkstore.ChunkRelPath(d)
	h.Put(t, bkt, key, bad)
	if size, err := s.(chunkstore.ChunkStatter).StatChunk(ctx, d); err != nil || size != int64(len(bad)) {
		t.Fatalf("StatChunk: %d, %v; want %d", size, err, len(bad))
	}
	for n := range 2 {
		aside, err := s.(chunkstore.ChunkReplacer).ReplaceChunk(ctx, d, bad, blob)
		want := fmt.Sprintf("%s.%d.bad", key, n)
		if err != nil || !bytes.HasSuffix([]byte(aside), []byte(want)) {
			t.Fatalf("ReplaceChunk %d: %q, %v; want the copy at %s", n, aside, err, want)
		}
		if got, ok := h.Get(t, bkt, want); !ok || !bytes.Equal(got, bad) {
			t.Errorf("%s: %d bytes (%v), want the damaged copy", want, len(got), ok)
		}
		got, err := s.ReadChunk(ctx, d, nil, 0)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("chunk after ReplaceChunk %d: %v", n, err)
		}
	}
}
