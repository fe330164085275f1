package restore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// ReadBackStats counts the work of ReadBack; fields are updated atomically.
type ReadBackStats struct {
	Bytes       atomic.Uint64 // bytes read back from the target
	HoleBytes   atomic.Uint64 // zero-range bytes skipped because the target has holes there
	Chunks      atomic.Uint64 // chunk positions whose digest was recomputed
	ZeroChecked atomic.Uint64 // zero-range bytes read and checked to be zero
	Differ      atomic.Uint64 // chunk positions whose digest differs from the index
	NotZero     atomic.Uint64 // zero-range pieces (up to the largest chunk each) that do not read as zeros
}

// ErrReadBackMismatch is wrapped by ReadBackFrom errors for target bytes that do
// not match the index.
var ErrReadBackMismatch = errors.New("target content does not match the index")

// ReadBackFrom proves a restored target: it reads every chunk position of
// plan back through r (a reader opened uncached, ReadBacker.ReadBack, so
// that the storage and not a cache answers), recomputes its digest (keyed
// with cc for an encrypted archive, plain for cc == nil) and compares it
// with the index; zero ranges must read as zeros (what r says holds no
// data, the holes of a sparse file, is skipped and counted as HoleBytes).
// It runs jobs readers and returns an error listing every mismatching
// offset range (ErrReadBackMismatch); name names the target in messages.
func ReadBackFrom(ctx context.Context, r BackReader, name string, plan *Plan, cc *crypto.Config, jobs int, stats *ReadBackStats) error {
	if jobs <= 0 {
		jobs = 1
	}
	if stats == nil {
		stats = new(ReadBackStats)
	}
	type job struct {
		off, length uint64
		digest      crypto.Digest
		zero        bool
	}
	maxLen := max(plan.maxChunk(), 1<<20)
	pool, err := newBufPool(jobs, alignUp(maxLen), true)
	if err != nil {
		return err
	}
	defer pool.close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		bad    []mismatch
		ioErr  error
		work   = make(chan job, jobs)
		wg     sync.WaitGroup
		zeroes = make([]byte, maxLen)
	)
	report := func(j job) {
		if j.zero {
			stats.NotZero.Add(1)
		} else {
			stats.Differ.Add(1)
		}
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, mismatch{off: j.off, end: j.off + j.length, zero: j.zero})
	}
	for range jobs {
		wg.Go(func() {
			for j := range work {
				buf := pool.get(ctx.Done())
				if buf == nil {
					continue
				}
				data := buf[:j.length]
				_, err := r.ReadAt(data, int64(j.off))
				if err != nil {
					mu.Lock()
					if ioErr == nil {
						ioErr = fmt.Errorf("%s: read back %d bytes at offset %d: %w", name, j.length, j.off, err)
						cancel()
					}
					mu.Unlock()
					pool.put(buf)
					continue
				}
				stats.Bytes.Add(j.length)
				if j.zero {
					stats.ZeroChecked.Add(j.length)
					if !bytes.Equal(data, zeroes[:len(data)]) {
						report(j)
					}
				} else {
					stats.Chunks.Add(1)
					h := sha256.New()
					h.Write(data)
					h.Write(cc.DigestSuffix())
					var got crypto.Digest
					h.Sum(got[:0])
					if got != j.digest {
						report(j)
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
		for i := range plan.Chunks {
			c := &plan.Chunks[i]
			for k := c.first; k >= 0; k = plan.next[k] {
				if !send(job{off: plan.offs[k], length: uint64(c.Length), digest: c.Digest}) {
					return
				}
			}
		}
		for _, z := range plan.Zero {
			for _, seg := range dataSegments(r, z.Offset, z.Length, stats) {
				for off := seg[0]; off < seg[1]; off += uint64(maxLen) {
					if !send(job{off: off, length: min(uint64(maxLen), seg[1]-off), zero: true}) {
						return
					}
				}
			}
		}
	}()
	wg.Wait()
	if ioErr != nil {
		return ioErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		ranges := mergeMismatches(bad)
		return fmt.Errorf("%s: %w in %d range(s): %s", name, ErrReadBackMismatch, len(ranges), strings.Join(ranges, ", "))
	}
	return nil
}

// mismatch is a target byte range [off, end) that failed the read-back: a
// chunk position whose digest differs, or a zero range that is not zero.
type mismatch struct {
	off, end uint64
	zero     bool
}

// mergeMismatches sorts the mismatching ranges by offset, joins adjacent
// ones and describes each: "[0,8388608) 2 chunks differ from the index",
// "[8388608,9437184) should read as zeros", or both counts.
func mergeMismatches(ms []mismatch) []string {
	slices.SortFunc(ms, func(a, b mismatch) int { return cmp.Compare(a.off, b.off) })
	var out []string
	for i := 0; i < len(ms); {
		off, end := ms[i].off, ms[i].end
		chunks, zeros := 0, 0
		for ; i < len(ms) && ms[i].off <= end; i++ {
			end = max(end, ms[i].end)
			if ms[i].zero {
				zeros++
			} else {
				chunks++
			}
		}
		var what []string
		if chunks > 0 {
			what = append(what, fmt.Sprintf("%d chunk(s) differ from the index", chunks))
		}
		if zeros > 0 {
			what = append(what, "should read as zeros")
		}
		out = append(out, fmt.Sprintf("[%d,%d) %s", off, end, strings.Join(what, ", ")))
	}
	return out
}

// dataSegments returns the parts of [off, off+length) that hold data
// according to r (BackReader.Data), counting the rest as hole bytes.
func dataSegments(r BackReader, off, length uint64, stats *ReadBackStats) [][2]uint64 {
	segs := r.Data(off, length)
	var dataBytes uint64
	for _, s := range segs {
		dataBytes += s[1] - s[0]
	}
	stats.HoleBytes.Add(length - dataBytes)
	return segs
}

// ReadBackTarget is ReadBackFrom of t, a target that can be read back
// (ReadBacker) and is still open, through a reader opened uncached; name
// names it in messages. A target that cannot be read back returns an
// error saying so.
func ReadBackTarget(ctx context.Context, t Target, name string, plan *Plan, cc *crypto.Config, jobs int, stats *ReadBackStats) error {
	rb, ok := t.(ReadBacker)
	if !ok {
		return fmt.Errorf("%s: the target cannot be read back", name)
	}
	r, err := rb.ReadBack(true)
	if err != nil {
		return fmt.Errorf("%s: the target cannot be read back", name)
	}
	defer r.Close()
	return ReadBackFrom(ctx, r, name, plan, cc, jobs, stats)
}
