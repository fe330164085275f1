package chunkstore

import (
	"context"
	"errors"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// ChunkChecker is implemented by stores with an existence check cheaper
// than StatChunk for a writer: a bucket's single HEAD, whose 404 a writer
// may take as "missing" unconfirmed (ChunkStatter confirms it with a GET,
// which a reader needs to call a chunk missing), since the write that
// follows finds out what the 404 meant (a missing bucket fails it, a
// chunk there after all is kept by the conditional write).
type ChunkChecker interface {
	// HasChunk reports whether a non-empty chunk for d is stored. Errors
	// (unreachable store, access denied) say nothing about the chunk.
	HasChunk(ctx context.Context, d crypto.Digest) (bool, error)
}

// HasChunk reports whether s has a non-empty chunk for d, asking it as
// cheaply as it can be asked: ChunkChecker, else ChunkStatter; ok is false
// when s can be asked neither way (then only a write tells).
func HasChunk(ctx context.Context, s Store, d crypto.Digest) (has, ok bool, err error) {
	if c, ok := s.(ChunkChecker); ok {
		has, err := c.HasChunk(ctx, d)
		return has, true, err
	}
	st, ok := s.(ChunkStatter)
	if !ok {
		return false, false, nil
	}
	size, err := st.StatChunk(ctx, d)
	switch {
	case err == nil:
		return size > 0, true, nil
	case errors.Is(err, ErrNotFound):
		return false, true, nil
	}
	return false, true, err
}
