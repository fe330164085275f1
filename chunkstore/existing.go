package chunkstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// ChunkStatter is implemented by stores that can tell whether a chunk is
// there, and its stored size, without reading it: a stat of the chunk file
// on a directory, a HEAD (metadata request) on a bucket.
type ChunkStatter interface {
	// StatChunk returns the size in bytes of the stored chunk for d. A
	// missing chunk returns an error wrapping ErrNotFound; other errors
	// (unreachable store, access denied) say nothing about the chunk.
	StatChunk(ctx context.Context, d crypto.Digest) (size int64, err error)
}

// StatChunk returns the stored size in bytes of the chunk for d: through
// s's StatChunk when it has one, else by reading the chunk (at most limit
// bytes, see Store.ReadChunk). Errors are those of StatChunk or ReadChunk;
// a missing chunk wraps ErrNotFound.
func StatChunk(ctx context.Context, s Store, d crypto.Digest, limit int) (int64, error) {
	if st, ok := s.(ChunkStatter); ok {
		return st.StatChunk(ctx, d)
	}
	b, err := s.ReadChunk(ctx, d, nil, limit)
	return int64(len(b)), err
}

// MaxBadGenerations is how many damaged copies of one chunk are kept aside:
// "<digest>.0.bad" to "<digest>.9.bad", as PBS's verify names them
// (FORMAT.md §1.2). Unlike PBS, which overwrites the last one when all are
// taken, pbsdirect never overwrites a .bad copy (ErrNoFreeBadName).
const MaxBadGenerations = 10

// ErrNoFreeBadName is wrapped by ReplaceChunk's error when every
// "<digest>.N.bad" name (N below MaxBadGenerations) is taken: an existing
// .bad copy, maybe the only intact one, is never overwritten, so the
// damaged chunk is left in place, not replaced. It is a state of the store
// to be cleared by hand (move the .bad copies away), no proof about the
// chunk's data.
var ErrNoFreeBadName = errors.New("no free .bad name: <digest>.0.bad to .9.bad are all taken (none is overwritten; move them away to let the chunk be replaced)")

// BadName returns the name a damaged chunk for d is moved aside to, in its
// prefix directory: "<64 hex>.<n>.bad".
func BadName(d crypto.Digest, n int) string {
	return fmt.Sprintf("%s.%d.bad", d, n)
}

// ChunkReplacer is implemented by the stores backups write to: it replaces
// a stored chunk found damaged, keeping the damaged copy aside as PBS does,
// so that nothing that was there is lost and readers never see it again.
type ChunkReplacer interface {
	// ReplaceChunk moves the stored chunk for d aside to the first free
	// BadName and writes blob in its place; when no name is free it
	// returns an error wrapping ErrNoFreeBadName and changes nothing (a
	// .bad copy is never overwritten). old is the stored chunk as the caller read
	// it: a bucket writes it under the new name (there is no rename), a
	// directory renames the file. A chunk that is gone meanwhile is just
	// written. It returns where the damaged copy now is (file path or
	// object URL; "" when nothing was moved).
	ReplaceChunk(ctx context.Context, d crypto.Digest, old, blob []byte) (aside string, err error)
}

// StatChunk returns the size of the first non-empty copy of the chunk for
// d among the members (see ChunkStatter), or 0 when the only copies are
// empty. When no member has one, the error joins every member's error and
// those of the stores left out (as ReadChunkFrom's: errors.Is finds
// ErrNotFound, ErrUnavailable, … of any).
func (c *Chain) StatChunk(ctx context.Context, d crypto.Digest) (int64, error) {
	var errs []error
	empty := false
	for _, m := range c.members {
		size, err := StatChunk(ctx, m, d, 0)
		switch {
		case err == nil && size > 0:
			return size, nil
		case err == nil:
			empty = true
		case ctx.Err() != nil:
			return 0, ctx.Err()
		default:
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
		}
	}
	if empty {
		return 0, nil
	}
	errs = append(errs, c.leftOut...)
	if len(errs) == 1 {
		return 0, errs[0]
	}
	return 0, fmt.Errorf("chunk %s: no store has a copy: %w", d, JoinErrors(errs...))
}
