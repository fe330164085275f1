package restore

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// CheckDurable re-reads, through rb (the open target's read-back,
// opened cached), every position of each chunk of plan that durable names — the chunks a
// resume journal records as written and synced — and returns the digests
// of those found whole at every position: the content hashes to the digest
// (keyed with cc for an encrypted archive, plain for cc == nil). A chunk
// the journal names but the target does not hold (a partial output changed
// since, another device at the same path, a forged journal) is left out, so
// that a resume fetches it again; a journal is never trusted without the
// target's bytes. jobs readers run at once. A position that cannot be
// read counts as not held, and so does every chunk when the target cannot
// be read back. held, when set, is called (concurrently) for
// each chunk found whole. The only error is ctx's.
func CheckDurable(ctx context.Context, rb ReadBacker, plan *Plan, durable map[crypto.Digest]bool, cc *crypto.Config, jobs int, held func(*Chunk)) (map[crypto.Digest]bool, error) {
	ok := make(map[crypto.Digest]bool, len(durable))
	if len(durable) == 0 {
		return ok, nil
	}
	r, err := rb.ReadBack(false)
	if err != nil {
		return ok, nil // cannot read the target back: everything is fetched again
	}
	defer r.Close()
	var (
		mu   sync.Mutex
		work = make(chan *Chunk)
		wg   sync.WaitGroup
	)
	for range max(jobs, 1) {
		wg.Go(func() {
			var buf []byte
			for c := range work {
				if cap(buf) < c.Length {
					buf = make([]byte, c.Length)
				}
				whole := true
				for k := c.first; k >= 0 && whole; k = plan.next[k] {
					if _, err := r.ReadAt(buf[:c.Length], int64(plan.offs[k])); err != nil {
						whole = false // unreadable here: fetched and written again
						break
					}
					h := sha256.New()
					h.Write(buf[:c.Length])
					h.Write(cc.DigestSuffix())
					var got crypto.Digest
					h.Sum(got[:0])
					whole = got == c.Digest
				}
				if whole {
					mu.Lock()
					ok[c.Digest] = true
					mu.Unlock()
					if held != nil {
						held(c)
					}
				}
			}
		})
	}
	for i := range plan.Chunks {
		c := &plan.Chunks[i]
		if !durable[c.Digest] {
			continue
		}
		select {
		case work <- c:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ok, nil
}

// DurableReaders is how many reads of the target RunResume's check of the
// durable chunks keeps in flight, whatever Options.Jobs says: the check
// runs at the target's read speed, beside the fetching.
const DurableReaders = 8

// RunResume is Run for a resume: the chunks of plan that durable names (a
// resume journal's, Journal.Done) are checked on the target, read back
// through rb (CheckDurable, DurableReaders at once, opts.Key for an encrypted
// archive) while the other chunks are fetched and written (Run, with the
// zero ranges); the durable chunks found missing or changed on the target
// are fetched after. opts.Held, when set, is called for each chunk found
// whole. It returns how many chunks were found whole (not fetched), and
// Run's error; the damaged chunks of both runs are reported together (a
// *DamagedError, Zeroed only if both zeroed theirs).
func RunResume(ctx context.Context, store chunkstore.Store, plan *Plan, target Target, rb ReadBacker, durable map[crypto.Digest]bool, opts Options, stats *Stats) (int, error) {
	if stats == nil {
		stats = new(Stats)
	}
	var key *crypto.Config
	if opts.Encrypted {
		key = opts.Key
	}
	var (
		held     map[crypto.Digest]bool
		checkErr error
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		held, checkErr = CheckDurable(ctx, rb, plan, durable, key, DurableReaders, opts.Held)
	})
	err := Run(ctx, store, plan.subset(func(c *Chunk) bool { return !durable[c.Digest] }, true), target, opts, stats)
	wg.Wait()
	if checkErr != nil {
		return 0, checkErr
	}
	again := plan.subset(func(c *Chunk) bool { return durable[c.Digest] && !held[c.Digest] }, false)
	resumed := 0
	for i := range plan.Chunks {
		if held[plan.Chunks[i].Digest] {
			resumed++
		}
	}
	var de *DamagedError
	if len(again.Chunks) == 0 || (err != nil && !errors.As(err, &de)) {
		return resumed, err
	}
	err2 := Run(ctx, store, again, target, opts, stats)
	var de2 *DamagedError
	switch {
	case err == nil:
		return resumed, err2
	case err2 == nil:
		return resumed, err
	case !errors.As(err2, &de2):
		return resumed, err2
	}
	return resumed, &DamagedError{Archive: de.Archive, Chunks: append(de.Chunks, de2.Chunks...), Count: max(de.Count, len(de.Chunks)) + max(de2.Count, len(de2.Chunks)), Zeroed: de.Zeroed && de2.Zeroed}
}
