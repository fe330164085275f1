package restore

import (
	"context"
	"crypto/sha256"
	"os"
	"sync"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// CheckDurable re-reads, through f (the open target, FileTarget.File),
// every position of each chunk of plan that durable names — the chunks a
// resume journal records as written and synced — and returns the digests
// of those found whole at every position: the content hashes to the digest
// (keyed with cc for an encrypted archive, plain for cc == nil). A chunk
// the journal names but the target does not hold (a partial output changed
// since, another device at the same path, a forged journal) is left out, so
// that a resume fetches it again; a journal is never trusted without the
// target's bytes. jobs readers run at once. A position that cannot be
// read counts as not held. The only error is ctx's.
func CheckDurable(ctx context.Context, f *os.File, plan *Plan, durable map[crypto.Digest]bool, cc *crypto.Config, jobs int) (map[crypto.Digest]bool, error) {
	ok := make(map[crypto.Digest]bool, len(durable))
	if len(durable) == 0 {
		return ok, nil
	}
	r, err := openSame(f, os.O_RDONLY)
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
