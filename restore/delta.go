package restore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Delta asks Restore (and RestoreGuest) for a differential restore into a
// target that holds an older copy of the image: only what differs is
// fetched and written (RestoreOptions.Delta).
type Delta struct {
	// Base is the snapshot whose same archive the target holds (--base):
	// index positions whose digest is the same in both indexes are
	// neither fetched nor written, positions that became zero are zeroed,
	// positions still zero are left alone. Unless VerifyBase, the target's
	// Record must vouch for it: the restore of Base's archive into this
	// target, completed, and the target unchanged since (identity and
	// size); otherwise the restore is refused (ErrRefused). Nil with
	// InPlace.
	Base *snapshot.Reader
	// VerifyBase trusts no record: each chunk range of the target whose
	// base digest equals the new one is read back (uncached, in parallel)
	// and hashed (keyed for an encrypted archive), and skipped only when
	// it matches; zero ranges that were zero in the base are read and
	// zeroed where they are not.
	VerifyBase bool
	// InPlace, without a Base, reads every chunk range of the target and
	// skips those already holding the new index's chunk, as desync does
	// with seeds; zero ranges are read and zeroed where they are not zero.
	InPlace bool
	// Readers is how many target reads run at once; 0: DurableReaders
	// (while the chunks that differ are fetched: the larger of it and
	// the jobs).
	Readers int
}

// Mode returns "base", "base-verified" or "in-place".
func (d *Delta) Mode() string {
	switch {
	case d.InPlace:
		return "in-place"
	case d.VerifyBase:
		return "base-verified"
	}
	return "base"
}

// DeltaResult is what a differential restore found and left out
// (Result.Delta, Summary.Delta). Positions are the index's non-zero chunk
// positions; bytes are image bytes.
type DeltaResult struct {
	Mode string `json:"mode"`           // Delta.Mode
	Base string `json:"base,omitempty"` // the base snapshot, TYPE/ID/TIME
	// Positions counts the new index's non-zero positions; Skipped those
	// neither fetched nor written (the target held them), SkippedBytes
	// their bytes; Written those fetched (or served by another position's
	// fetch) and written.
	Positions    uint64 `json:"positions"`
	Skipped      uint64 `json:"skipped-positions"`
	SkippedBytes uint64 `json:"skipped-bytes"`
	Written      uint64 `json:"written-positions"`
	// Checked counts the positions read back from the target and hashed,
	// ReadBytes every byte read back (zero ranges included); what lies
	// past the end of what the target held before the restore (a smaller
	// file, none) is known to be zeros: neither read nor counted.
	Checked   uint64 `json:"checked-positions"`
	ReadBytes uint64 `json:"read-bytes"`
	// ZeroedBytes are the bytes of zero ranges zeroed (they were not zero
	// on the target, or could not be known to be); ZeroKeptBytes those
	// left alone, zero already.
	ZeroedBytes   uint64 `json:"zeroed-bytes"`
	ZeroKeptBytes uint64 `json:"zero-kept-bytes"`
}

// posEntry is one non-zero index position of a plan: its byte range and
// the plan's chunk filling it.
type posEntry struct {
	off    uint64
	length uint32
	chunk  int32
}

// entries returns p's non-zero positions sorted by offset: 16 bytes each.
func (p *Plan) entries() []posEntry {
	out := make([]posEntry, 0, len(p.offs))
	for ci := range p.Chunks {
		c := &p.Chunks[ci]
		for k := c.first; k >= 0; k = p.next[k] {
			out = append(out, posEntry{off: p.offs[k], length: uint32(c.Length), chunk: int32(ci)})
		}
	}
	slices.SortFunc(out, func(a, b posEntry) int { return cmp.Compare(a.off, b.off) })
	return out
}

// deltaInput is what planDelta compares: the new plan, the base's (nil
// in place), the target's read-back (nil when the base is trusted) and
// the digest key.
type deltaInput struct {
	plan, base *Plan
	r          BackReader // nil: nothing is read (a trusted base)
	// held, when heldKnown, is the size of what the target held before
	// the restore opened it (0: it was not there): past it the target
	// reads as zeros, which are not read back.
	held      uint64
	heldKnown bool
	cc        *crypto.Config
	readers   int
	res       *DeltaResult
}

// planDelta returns the plan of what must be written to the target so that
// it holds in.plan's image: a plan (not covering the whole image) with the
// positions to fetch and write and the zero ranges to zero. A position is
// left out when the base has the same digest there and the base is trusted
// (in.r nil), or when the target reads back holding it (checked: with a
// base, only where the base digest matches; in place, everywhere). Zero
// ranges are left out where the base was zero too (trusted), or where the
// target reads as zeros (checked). It counts into in.res; errors are ctx's
// and the target's reads.
func planDelta(ctx context.Context, in deltaInput) (*Plan, error) {
	n, b, res := in.plan, in.base, in.res
	ne := n.entries()
	var be []posEntry
	if b != nil {
		be = b.entries()
	}
	res.Positions = uint64(len(ne))
	// Which positions to check or skip.
	type cand struct {
		e    posEntry
		keep atomic.Bool // the target holds it
	}
	var cands []*cand
	write := make([]bool, len(ne))
	j := 0
	for i, e := range ne {
		for j < len(be) && be[j].off < e.off {
			j++
		}
		same := j < len(be) && be[j].off == e.off && be[j].length == e.length && b.Chunks[be[j].chunk].Digest == n.Chunks[e.chunk].Digest
		switch {
		case b != nil && in.r == nil && same:
			res.Skipped++
			res.SkippedBytes += uint64(e.length)
		case in.r != nil && (b == nil || same):
			cands = append(cands, &cand{e: e})
			write[i] = true // until the check says otherwise
		default:
			write[i] = true
		}
	}
	zeroKnown, zeroWrite := splitZero(n, b, be)
	if in.r == nil {
		for _, z := range zeroKnown {
			res.ZeroKeptBytes += z.Length
		}
		zeroKnown = nil
	}
	// Read back what is to be checked.
	var notZero []Range
	if in.r != nil {
		var err error
		notZero, err = checkTarget(ctx, in, func(yield func(off uint64, length int, d crypto.Digest, held func())) {
			for _, c := range cands {
				yield(c.e.off, int(c.e.length), n.Chunks[c.e.chunk].Digest, func() { c.keep.Store(true) })
			}
		}, zeroKnown)
		if err != nil {
			return nil, err
		}
		for _, z := range zeroKnown {
			res.ZeroKeptBytes += z.Length
		}
		for _, z := range notZero {
			res.ZeroKeptBytes -= z.Length
		}
		k := 0
		for i := range ne {
			if k < len(cands) && cands[k].e.off == ne[i].off {
				if cands[k].keep.Load() {
					write[i] = false
					res.Skipped++
					res.SkippedBytes += uint64(ne[i].length)
				}
				k++
			}
		}
	}
	q := &Plan{Size: n.Size, ChunkSize: n.ChunkSize, ZeroDigest: n.ZeroDigest, noZero: n.noZero}
	for i, e := range ne {
		if !write[i] {
			continue
		}
		res.Written++
		if err := q.AddRange(e.off, uint64(e.length), n.Chunks[e.chunk].Digest); err != nil {
			return nil, err
		}
	}
	q.Positions = n.Positions
	zeros := MergeRanges(append(zeroWrite, notZero...))
	for _, z := range zeros {
		q.ZeroBytes += z.Length
	}
	q.Zero = zeros
	res.ZeroedBytes = q.ZeroBytes
	q.Finish()
	q.dropped = true
	return q, nil
}

// splitZero splits the zero ranges of n into what the base b (positions
// be) had zero too (known: to check or keep) and what it had not (always
// zeroed); without a base every zero range is known (to check).
func splitZero(n, b *Plan, be []posEntry) (known, write []Range) {
	for _, z := range n.Zero {
		if b == nil {
			known = append(known, z)
			continue
		}
		for _, r := range splitByBase(z, b, be) {
			if r.known {
				known = append(known, r.Range)
			} else {
				write = append(write, r.Range)
			}
		}
	}
	return known, write
}

// baseRange is a piece of a zero range: known says that the base was zero
// there too (within its size, no base chunk).
type baseRange struct {
	Range
	known bool
}

// splitByBase splits the zero range z of the new image by what the base
// plan b (its positions be, sorted) had there: zero (known) or data, or
// nothing (past its end: not known).
func splitByBase(z Range, b *Plan, be []posEntry) []baseRange {
	var out []baseRange
	add := func(off, end uint64, known bool) {
		if end <= off {
			return
		}
		if n := len(out); n > 0 && out[n-1].known == known && out[n-1].Offset+out[n-1].Length == off {
			out[n-1].Length += end - off
			return
		}
		out = append(out, baseRange{Range{Offset: off, Length: end - off}, known})
	}
	end := z.Offset + z.Length
	at := z.Offset
	// The first base position that may overlap z.
	i := sort.Search(len(be), func(i int) bool { return be[i].off+uint64(be[i].length) > z.Offset })
	for ; i < len(be) && be[i].off < end && at < end; i++ {
		s, e := max(be[i].off, at), min(be[i].off+uint64(be[i].length), end)
		add(at, min(s, b.Size), true)
		add(max(at, min(s, b.Size)), s, false)
		add(s, e, false)
		at = e
	}
	add(at, min(end, max(at, b.Size)), true)
	add(max(at, b.Size), end, false)
	return out
}

// checkTarget reads back, with in.readers readers at once through in.r,
// every position items yields, hashing it (keyed with
// in.cc) and calling its held function when the digest matches (a
// position past in.held is hashed as zeros without being read or counted
// in ReadBytes and Checked), and the
// zero ranges zero (only what the reader says may hold data), returning
// the pieces of them (up to the plan's chunk size, 4 MiB for a dynamic
// index) that do not read as zeros.
func checkTarget(ctx context.Context, in deltaInput, items func(yield func(off uint64, length int, d crypto.Digest, held func())), zero []Range) ([]Range, error) {
	readers := in.readers
	if readers <= 0 {
		readers = DurableReaders
	}
	piece := in.plan.ChunkSize
	if piece == 0 {
		piece = 4 << 20
	}
	maxLen := max(in.plan.maxChunk(), int(piece))
	pool, err := newBufPool(readers, alignUp(maxLen), true)
	if err != nil {
		return nil, err
	}
	defer pool.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		off    uint64
		length int
		digest crypto.Digest
		held   func()
		zero   bool
		hole   bool // a position past what the target held: zeros, not read
	}
	var (
		mu      sync.Mutex
		ioErr   error
		notZero []Range
		work    = make(chan job, readers)
		wg      sync.WaitGroup
		zeroes  = make([]byte, maxLen)
	)
	for range readers {
		wg.Go(func() {
			for j := range work {
				buf := pool.get(ctx.Done())
				if buf == nil {
					continue
				}
				data := buf[:j.length]
				if j.hole {
					data = zeroes[:j.length]
				} else if _, err := in.r.ReadAt(data, int64(j.off)); err != nil {
					mu.Lock()
					if ioErr == nil {
						ioErr = fmt.Errorf("read back %d bytes at offset %d: %w", j.length, j.off, err)
						cancel()
					}
					mu.Unlock()
					pool.put(buf)
					continue
				}
				if !j.hole {
					atomic.AddUint64(&in.res.ReadBytes, uint64(j.length))
				}
				if j.zero {
					if !bytes.Equal(data, zeroes[:j.length]) {
						mu.Lock()
						notZero = append(notZero, Range{Offset: j.off, Length: uint64(j.length)})
						mu.Unlock()
					}
				} else {
					if !j.hole {
						atomic.AddUint64(&in.res.Checked, 1)
					}
					h := sha256.New()
					h.Write(data)
					h.Write(in.cc.DigestSuffix())
					var got crypto.Digest
					h.Sum(got[:0])
					if got == j.digest {
						j.held()
					}
				}
				pool.put(buf)
			}
		})
	}
	send := func(j job) bool {
		select {
		case work <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	func() {
		defer close(work)
		stop := false
		items(func(off uint64, length int, d crypto.Digest, held func()) {
			// Past what the target held before it was opened (a file
			// extended for the image, one just created): zeros, hashed
			// as such, not read, nor counted as read back.
			hole := in.heldKnown && uint64(off) >= in.held
			if !stop && !send(job{off: off, length: length, digest: d, held: held, hole: hole}) {
				stop = true
			}
		})
		if stop {
			return
		}
		for _, z := range zero {
			if in.heldKnown {
				// Past what the target held, a zero range is zero.
				if z.Offset >= in.held {
					continue
				}
				z.Length = min(z.Length, in.held-z.Offset)
			}
			for _, seg := range in.r.Data(z.Offset, z.Length) {
				// Pieces aligned to the chunk grid, so that a damaged
				// piece is exactly a chunk position.
				for off := seg[0]; off < seg[1]; {
					end := min(seg[1], (off/piece+1)*piece)
					if !send(job{off: off, length: int(end - off), zero: true}) {
						return
					}
					off = end
				}
			}
		}
	}()
	wg.Wait()
	if ioErr != nil {
		return nil, ioErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return MergeRanges(notZero), nil
}
