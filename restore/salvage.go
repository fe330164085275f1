package restore

import (
	"context"
	"fmt"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// MaxSalvagedListed is how many chunks recovered from a .bad copy a
// SalvageLog lists; it counts them all.
const MaxSalvagedListed = 64

// SalvagedChunk is a chunk whose ordinary copies were all missing or
// damaged and that was recovered from a copy kept aside as damaged
// ("<digest>.N.bad", chunkstore.BadCopies) that passed the chunk's check.
type SalvagedChunk struct {
	Digest string `json:"digest"`
	Copy   string `json:"copy"` // the .bad copy's file path or object URL
}

// SalvageLog records the chunks a run recovered from .bad copies: the
// first MaxSalvagedListed of them, and how many. Safe for concurrent use.
type SalvageLog struct {
	mu     sync.Mutex
	chunks []SalvagedChunk
	n      int
}

func (l *SalvageLog) add(c SalvagedChunk) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.chunks) < MaxSalvagedListed {
		l.chunks = append(l.chunks, c)
	}
	l.n++
}

// Chunks returns the chunks recorded, at most MaxSalvagedListed, in the
// order they were recovered.
func (l *SalvageLog) Chunks() []SalvagedChunk {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]SalvagedChunk(nil), l.chunks...)
}

// Count returns how many chunks were recovered from .bad copies.
func (l *SalvageLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// BadCopyError is the failure, under Options.BadCopyIsDamage (verify), of
// a chunk that is intact only in a copy kept aside as damaged: the data
// can be recovered, but PBS, which never reads a .bad copy, cannot
// restore it. It matches what Err (the ordinary copies' failure: missing
// or damaged) matches.
type BadCopyError struct {
	Err  error  // why the ordinary copies failed
	Copy string // the .bad copy that passed (file path or object URL)
}

// Error says why the ordinary copies failed and which .bad copy holds the
// chunk intact.
func (e *BadCopyError) Error() string {
	return fmt.Sprintf("%v; intact only in a .bad copy, which PBS does not read (recovered from a .bad copy: %s; `pbsdirect repair --store STORE` or renaming the copy to the chunk's name mends the store)", e.Err, e.Copy)
}

// Unwrap returns Err.
func (e *BadCopyError) Unwrap() error { return e.Err }

// salvage tries the .bad copies of f's chunk, whose every ordinary copy
// failed with failed (chunkstore.Salvage), each checked as decodeChunk
// checks a chunk, into out. One that passes is recorded in stats and its
// data returned (or, under BadCopyIsDamage, a *BadCopyError); otherwise
// Salvage's error.
func salvage(ctx context.Context, store chunkstore.Store, dec *chunkstore.Decoder, out []byte, f *fetched, failed error, opts Options, stats *Stats) ([]byte, error) {
	var data []byte
	raw, copy, err := chunkstore.Salvage(ctx, store, f.chunk.Digest, failed, f.buf, chunkstore.ChunkLimit(f.chunk.Length), func(raw []byte) error {
		var err error
		data, err = decodeChunk(dec, out, fetched{chunk: f.chunk, raw: raw}, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	stats.FetchedBytes.Add(uint64(len(raw)))
	stats.Salvaged.add(SalvagedChunk{Digest: f.chunk.Digest.String(), Copy: copy})
	if opts.BadCopyIsDamage {
		return nil, &BadCopyError{Err: failed, Copy: copy}
	}
	return data, nil
}
