package verify

import (
	"context"
	"fmt"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
)

// confirm makes sure that the chunks of fresh, skipped because the state
// says they were verified recently, are still in the store: a stat on a
// directory, a HEAD on a bucket (chunkstore.StatChunk), as many at a time
// as opts has fetchers (or jobs). A
// chunk there with a plausible size (1 … chunkstore.ChunkLimit bytes)
// counts in a.ChunksPresent and is not asked for again in this run; one
// missing, empty or oversized is damaged as in a full check (reported, and
// forgotten by the state so that the next run checks it). A check that
// fails otherwise than by proving the chunk missing or of a wrong size
// (chunkstore.Proven is false: refused credentials, a 5xx after the
// retries, EACCES) proves nothing: the chunk is not taken for damaged, and
// confirm returns that error (the run could not complete, exit 3). It
// returns a *restore.DamagedError when any was damaged and no check
// failed so.
//
// positions is as for Verifier.check. A chunk confirmed present first in
// this run counts once in the report (Verifier.nPresent).
func (v *Verifier) confirm(ctx context.Context, s index.Snapshot, plan *restore.Plan, fresh []restore.Chunk, positions int, opts restore.Options, a *ArchiveResult) error {
	if len(fresh) == 0 {
		return nil
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		damaged  int
		unproven error // the first presence check that failed for a cause outside the data
		next     = make(chan *restore.Chunk)
	)
	encrypted := opts.Encrypted
	for range max(opts.Fetchers, opts.Jobs, 1) {
		wg.Go(func() {
			for c := range next {
				err := v.present(ctx, c)
				k := keyOf(c, encrypted)
				if err == nil {
					v.mu.Lock()
					a.ChunksPresent++
					if v.chunks[k] == confirming {
						v.chunks[k] = present
						v.nPresent++
					}
					v.mu.Unlock()
					continue
				}
				if ctx.Err() != nil {
					continue
				}
				if !chunkstore.Proven(err) {
					// The check could not be made (credentials, a 5xx
					// after the retries, a local permission): it proves
					// nothing about the chunk.
					mu.Lock()
					if unproven == nil {
						unproven = err
					}
					mu.Unlock()
					continue
				}
				v.opts.State.Forget(c.Digest, c.Length, encrypted)
				v.damaged(s, a, &restore.ChunkError{Digest: c.Digest, Length: c.Length, Offsets: plan.Offsets(c),
					Location: v.store.ChunkLocation(c.Digest), Err: err}, positions)
				mu.Lock()
				damaged++
				mu.Unlock()
			}
		})
	}
	for i := range fresh {
		select {
		case next <- &fresh[i]:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if unproven != nil {
		return fmt.Errorf("checking that chunks verified before are still there: %w", unproven)
	}
	if damaged > 0 {
		return &restore.DamagedError{Archive: opts.Archive, Count: damaged}
	}
	return nil
}

// present returns nil when the chunk c is in the store with a size it can
// have, else why not (wrapping chunkstore.ErrNotFound, ErrEmpty or
// ErrTooLarge, or the store's error).
func (v *Verifier) present(ctx context.Context, c *restore.Chunk) error {
	limit := chunkstore.ChunkLimit(c.Length)
	size, err := chunkstore.StatChunk(ctx, v.store, c.Digest, limit)
	switch {
	case err != nil:
		return err
	case size == 0:
		return fmt.Errorf("chunk %s: %w", c.Digest, &chunkstore.LocatedError{Location: v.store.ChunkLocation(c.Digest),
			Err: fmt.Errorf("%w (evicted-chunk marker or corruption)", chunkstore.ErrEmpty)})
	case size > int64(limit):
		return fmt.Errorf("chunk %s: %w", c.Digest, &chunkstore.LocatedError{Location: v.store.ChunkLocation(c.Digest),
			Err: fmt.Errorf("%w: %d bytes, the chunk at most %d", chunkstore.ErrTooLarge, size, limit)})
	}
	return nil
}
