package restore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// runChecked runs a verified-base or in-place differential restore of the
// disk's image (dl) into its open target: the fetchers read back (uncached)
// and hash, chunk by chunk, the target's ranges that may hold it already
// (every position in place; with a base, those whose base digest is the
// new one), in parallel with the fetches of the chunks that differ
// (Options.Skip leaves out a chunk held at every position, Options.HeldAt
// the positions held of one fetched); beside them the zero ranges are read
// (what the target says holds data) and zeroed where they are not zero, and
// those the base did not have zero are zeroed. A position that cannot be
// read is written. It counts into d.delta.res and returns Run's error, or
// the zeroing's; the target is synced once both are done.
func (d *disk) runChecked(ctx context.Context, store chunkstore.Store, dl *Delta, opts Options, stats *Stats) error {
	n, b, res := d.plan, d.delta.base, d.delta.res
	rb, ok := d.target.(ReadBacker)
	if !ok {
		return fmt.Errorf("%s: the target cannot be read back: restore without --verify-base or --in-place", d.sink)
	}
	r, err := rb.ReadBack(true)
	if err != nil {
		return fmt.Errorf("%s: read back: %w", d.sink, err)
	}
	defer r.Close()
	var cc *crypto.Config
	if d.encrypted {
		cc = d.res.Key
	}
	var be []posEntry
	var cand map[uint64]bool // with a base: the offsets read back
	if b != nil {
		be = b.entries()
		cand = map[uint64]bool{}
		j := 0
		for _, e := range n.entries() {
			for j < len(be) && be[j].off < e.off {
				j++
			}
			if j < len(be) && be[j].off == e.off && be[j].length == e.length && b.Chunks[be[j].chunk].Digest == n.Chunks[e.chunk].Digest {
				cand[e.off] = true
			}
		}
	}
	res.Positions = uint64(len(n.offs))
	zeroKnown, zeroWrite := splitZero(n, b, be)

	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs()
	}
	fetchers := opts.Fetchers
	if fetchers <= 0 {
		fetchers = jobs
	}
	// The reads back: one per fetcher, at most Readers (default the
	// larger of DurableReaders and the jobs) at once, so that the tens of
	// fetchers of a bucket do not double the buffers.
	readers := dl.Readers
	if readers <= 0 {
		readers = max(DurableReaders, jobs)
	}
	pool, err := newBufPool(min(fetchers, readers), alignUp(max(n.maxChunk(), 1)), true)
	if err != nil {
		return err
	}
	defer pool.close()
	var (
		mu    sync.Mutex
		held  = map[uint64]bool{} // positions held of chunks that are fetched
		zeros = make([]byte, n.maxChunk())
	)
	opts.Skip = func(c *Chunk) bool {
		buf := pool.get(ctx.Done())
		if buf == nil {
			return false
		}
		defer pool.put(buf)
		all := true
		var mine []uint64
		for k := c.first; k >= 0; k = n.next[k] {
			off := n.offs[k]
			if cand != nil && !cand[off] {
				all = false // changed since the base: written without reading
				continue
			}
			data := buf[:c.Length]
			if d.delta.heldKnown && off >= d.delta.held {
				// Past what the target held: zeros, not read.
				data = zeros[:c.Length]
			} else {
				if _, err := r.ReadAt(data, int64(off)); err != nil {
					all = false
					continue
				}
				atomic.AddUint64(&res.ReadBytes, uint64(c.Length))
				atomic.AddUint64(&res.Checked, 1)
			}
			h := sha256.New()
			h.Write(data)
			h.Write(cc.DigestSuffix())
			var got crypto.Digest
			h.Sum(got[:0])
			if got == c.Digest {
				mine = append(mine, off)
			} else {
				all = false
			}
		}
		atomic.AddUint64(&res.Skipped, uint64(len(mine)))
		atomic.AddUint64(&res.SkippedBytes, uint64(len(mine))*uint64(c.Length))
		if all {
			return true
		}
		atomic.AddUint64(&res.Written, uint64(c.count)-uint64(len(mine)))
		if len(mine) > 0 {
			mu.Lock()
			for _, o := range mine {
				held[o] = true
			}
			mu.Unlock()
		}
		return false
	}
	opts.HeldAt = func(c *Chunk, off uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		return held[off]
	}

	var (
		zwg  sync.WaitGroup
		zerr error
	)
	zwg.Go(func() {
		notZero, err := checkTarget(ctx, deltaInput{plan: n, r: r, readers: dl.Readers, res: res, held: d.delta.held, heldKnown: d.delta.heldKnown},
			func(func(uint64, int, crypto.Digest, func())) {}, zeroKnown)
		if err != nil {
			zerr = err
			return
		}
		kept := uint64(0)
		for _, z := range zeroKnown {
			kept += z.Length
		}
		for _, z := range MergeRanges(append(zeroWrite, notZero...)) {
			if err := d.target.Zero(int64(z.Offset), int64(z.Length)); err != nil {
				zerr = err
				return
			}
			res.ZeroedBytes += z.Length
			stats.ZeroBytes.Add(z.Length)
		}
		for _, z := range notZero {
			kept -= z.Length
		}
		res.ZeroKeptBytes = kept
	})
	err = Run(ctx, store, n.subset(func(*Chunk) bool { return true }, false), d.target, opts, stats)
	zwg.Wait()
	var de *DamagedError
	if err == nil || (errors.As(err, &de) && de.Zeroed) {
		if zerr != nil {
			return zerr
		}
		// What the zeroing did is made durable too.
		if serr := d.target.Sync(); serr != nil {
			return serr
		}
	}
	return err
}
