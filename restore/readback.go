package restore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

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

// ErrReadBackMismatch is wrapped by ReadBack errors for target bytes that do
// not match the index.
var ErrReadBackMismatch = errors.New("target content does not match the index")

// ReadBack proves a restored target: it reads every chunk position of plan
// back from path — with O_DIRECT where possible, so the device and not the
// page cache answers — recomputes its digest (keyed with cc for an encrypted
// archive, plain for cc == nil) and compares it with the index; zero ranges
// must read as zeros (holes of a sparse file are skipped, SEEK_HOLE). It runs
// jobs readers and returns an error listing every mismatching offset range.
func ReadBack(ctx context.Context, path string, plan *Plan, cc *crypto.Config, jobs int, stats *ReadBackStats) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return ReadBackFile(ctx, f, path, plan, cc, jobs, stats)
}

// ReadBackFile is ReadBack of the open file f (FileTarget.File, held since
// the restore): the O_DIRECT reader is opened on the same file through
// /proc/self/fd, never by path again, so a directory moved or a link
// swapped meanwhile cannot make it read another file. path names f in
// messages.
func ReadBackFile(ctx context.Context, f *os.File, path string, plan *Plan, cc *crypto.Config, jobs int, stats *ReadBackStats) error {
	if jobs <= 0 {
		jobs = 1
	}
	if stats == nil {
		stats = new(ReadBackStats)
	}
	rd := f
	if d, err := openSame(f, os.O_RDONLY|unix.O_DIRECT); err == nil {
		defer d.Close()
		rd = d
	} else {
		// No O_DIRECT: drop the cached pages so the reads reach the storage.
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
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
				data, err := readFull(rd, f, buf[:alignUp(int(j.length))], int64(j.off), int(j.length))
				if err != nil {
					mu.Lock()
					if ioErr == nil {
						ioErr = fmt.Errorf("%s: read back %d bytes at offset %d: %w", path, j.length, j.off, err)
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
			for _, seg := range dataSegments(f, z.Offset, z.Length, stats) {
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
		return fmt.Errorf("%s: %w in %d range(s): %s", path, ErrReadBackMismatch, len(ranges), strings.Join(ranges, ", "))
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

// readFull reads length bytes at off into buf (Alignment-aligned, at least
// length rounded up), through the O_DIRECT descriptor d when off is aligned,
// else through f. A short read at the end of the file is an error.
func readFull(d, f *os.File, buf []byte, off int64, length int) ([]byte, error) {
	r := d
	if off%Alignment != 0 {
		r = f
		buf = buf[:length]
	}
	n, err := r.ReadAt(buf, off)
	if n >= length {
		return buf[:length], nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, unix.EINVAL) && r == d {
		if n, err = f.ReadAt(buf[:length], off); n == length {
			return buf[:length], nil
		}
	}
	return nil, err
}

// dataSegments returns the parts of [off, off+length) that hold data
// according to SEEK_DATA/SEEK_HOLE (all of it when the file system cannot
// tell), counting the rest as hole bytes.
func dataSegments(f *os.File, off, length uint64, stats *ReadBackStats) [][2]uint64 {
	end := off + length
	fd := int(f.Fd())
	var segs [][2]uint64
	for pos := off; pos < end; {
		data, err := unix.Seek(fd, int64(pos), unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, unix.ENXIO) { // only a hole up to EOF
				break
			}
			return [][2]uint64{{off, end}}
		}
		if uint64(data) >= end {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return [][2]uint64{{off, end}}
		}
		segs = append(segs, [2]uint64{uint64(data), min(uint64(hole), end)})
		pos = uint64(hole)
	}
	var dataBytes uint64
	for _, s := range segs {
		dataBytes += s[1] - s[0]
	}
	stats.HoleBytes.Add(length - dataBytes)
	return segs
}

// openSame opens the file f is open on again, with flags, through
// /proc/self/fd, and checks that it is the same inode.
func openSame(f *os.File, flags int) (*os.File, error) {
	d, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var a, b unix.Stat_t
	if unix.Fstat(int(d.Fd()), &a) != nil || unix.Fstat(int(f.Fd()), &b) != nil || a.Ino != b.Ino || a.Dev != b.Dev {
		d.Close()
		return nil, fmt.Errorf("%s: reopened descriptor is another file", f.Name())
	}
	return d, nil
}

// ReadBackTarget is ReadBackFile of t, a target written through an open
// file (FileBacked) and still open, named name in messages; a target that
// cannot be read back returns an error saying so.
func ReadBackTarget(ctx context.Context, t Target, name string, plan *Plan, cc *crypto.Config, jobs int, stats *ReadBackStats) error {
	fb, ok := t.(FileBacked)
	if !ok || fb.File() == nil {
		return fmt.Errorf("%s: the target cannot be read back", name)
	}
	return ReadBackFile(ctx, fb.File(), name, plan, cc, jobs, stats)
}
