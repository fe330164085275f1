// Package ratelimit caps what a run takes from a datastore: the bytes it
// reads (--rate, --burst) and the requests it makes (--rate-requests), with
// token buckets (golang.org/x/time/rate) shared by every store of the run.
// Waits end when their context does. A nil *Limiter limits nothing.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limits configures a Limiter. Zero fields limit nothing.
type Limits struct {
	// BytesPerSecond is the most bytes read per second, averaged over the
	// run; 0: no byte limit.
	BytesPerSecond int64
	// Burst is the most bytes read at once after a pause, in bytes; 0:
	// DefaultBurst(BytesPerSecond). A read larger than Burst waits in
	// pieces of at most Burst. New raises it to MinBurst and lowers it to
	// MaxBurst: the Limits of a Limiter hold the burst in force.
	Burst int64
	// RequestsPerSecond is the most requests (GET, HEAD, LIST; a chunk or
	// file opened in a directory) started per second; 0: no request
	// limit. It may be below 1 (0.5: one every 2 s).
	RequestsPerSecond float64
}

// MinBurst and MaxBurst bound the burst in bytes: below MinBurst the
// pieces read and waited for would be so small that the waits, not the
// rate, set the pace (a burst of 1 byte read byte by byte); MaxBurst is
// the most the token bucket holds.
const (
	MinBurst = 32 << 10
	MaxBurst = math.MaxInt32
)

// MaxBytesPerSecond is the highest byte rate New takes: 1 PiB/s, far above
// any link, and well inside what the token bucket counts exactly.
const MaxBytesPerSecond = 1 << 50

// DefaultBurst is the burst in bytes for a rate of bytesPerSecond when
// none is given: one second's worth, as proxmox-backup-client's --burst.
func DefaultBurst(bytesPerSecond int64) int64 { return bytesPerSecond }

// maxPiece is the most bytes one Read of a limited reader takes before it
// waits, so that a transfer moves steadily and a wait stays short.
const maxPiece = 64 << 10

// minPiece is the least bytes one Read of a limited reader takes.
const minPiece = 256

// piece returns the most bytes a limited Read takes now: the readers open
// share 1/16 s of the rate (within minPiece and maxPiece, at most the
// burst), so that each of them moves again within about 1/16 s (more only
// at rates below minPiece × 16 per reader), far inside the bucket stores'
// --io-timeout, which cuts a transfer whose reader waits longer.
func (l *Limiter) piece() int {
	n := max(1, l.readers.Load())
	return int(min(maxPiece, int64(l.bytes.Burst()), max(minPiece, l.limits.BytesPerSecond/(16*n))))
}

// Limiter holds the token buckets of one run. It is safe for concurrent
// use; its methods do nothing on a nil *Limiter.
type Limiter struct {
	limits Limits
	bytes  *rate.Limiter // nil: no byte limit
	reqs   *rate.Limiter // nil: no request limit

	nBytes, nReqs atomic.Int64
	readers       atomic.Int64 // limited readers open (Reader, until Close)

	mu        sync.Mutex
	waiting   int           // waits in progress
	waitStart time.Time     // when waiting went from 0 to 1
	waited    time.Duration // wall time with some wait in progress, before waitStart
	// transfers are the readers open and WaitBytes calls in progress,
	// taking the byte rate in their order (priority.go); seq numbers
	// them; changed, when not nil, is closed when one of them stops
	// waiting or ends.
	transfers map[*transfer]struct{}
	seq       int64
	changed   chan struct{}
}

// New returns the limiter for l, or nil when l limits nothing. Its buckets
// start empty, so the rate holds from the first byte. A negative field, a
// byte rate above MaxBytesPerSecond, or a burst without a byte rate, is an
// error.
func New(l Limits) (*Limiter, error) {
	if l.BytesPerSecond < 0 || l.Burst < 0 || l.RequestsPerSecond < 0 || math.IsNaN(l.RequestsPerSecond) || math.IsInf(l.RequestsPerSecond, 0) {
		return nil, fmt.Errorf("rate limits must not be negative: %+v", l)
	}
	if l.BytesPerSecond > MaxBytesPerSecond {
		return nil, fmt.Errorf("a byte rate of %d bytes/s is above the most taken, 1PiB/s: leave the limit out for none", l.BytesPerSecond)
	}
	if l.Burst > 0 && l.BytesPerSecond == 0 {
		return nil, fmt.Errorf("a burst needs a byte rate")
	}
	if l.BytesPerSecond == 0 && l.RequestsPerSecond == 0 {
		return nil, nil
	}
	lim := &Limiter{limits: l}
	now := time.Now()
	if l.BytesPerSecond > 0 {
		if l.Burst == 0 {
			lim.limits.Burst = DefaultBurst(l.BytesPerSecond)
		}
		lim.limits.Burst = min(max(lim.limits.Burst, MinBurst), MaxBurst)
		burst := int(lim.limits.Burst)
		lim.bytes = rate.NewLimiter(rate.Limit(l.BytesPerSecond), burst)
		lim.bytes.AllowN(now, burst)
	}
	if l.RequestsPerSecond > 0 {
		// One request at once: requests spread evenly over each second.
		lim.reqs = rate.NewLimiter(rate.Limit(l.RequestsPerSecond), 1)
		lim.reqs.AllowN(now, 1)
	}
	return lim, nil
}

// Limits returns the limits in force (the default burst filled in); zero
// for a nil Limiter.
func (l *Limiter) Limits() Limits {
	if l == nil {
		return Limits{}
	}
	return l.limits
}

// WaitBytes waits until n more bytes may be read, in pieces of at most the
// burst, in its turn (see Background), counting each piece as it is
// granted. It returns ctx's error when ctx ends first, the bytes not
// granted uncounted.
func (l *Limiter) WaitBytes(ctx context.Context, n int) error {
	if l == nil || n <= 0 {
		return nil
	}
	if l.bytes == nil {
		l.nBytes.Add(int64(n))
		return nil
	}
	t := l.open(ctx)
	defer l.close(t)
	return l.waitBytes(ctx, t, n)
}

// waitBytes waits until n more bytes may be read by t, counting them as
// they are granted (a wait cut by ctx leaves the rest uncounted).
func (l *Limiter) waitBytes(ctx context.Context, t *transfer, n int) error {
	for n > 0 {
		k, err := l.turn(ctx, t, min(n, l.bytes.Burst()))
		if err != nil {
			return err
		}
		if err := l.wait(ctx, l.bytes, k, t); err != nil {
			return err
		}
		l.nBytes.Add(int64(k))
		n -= k
	}
	return nil
}

// ReadFull reads len(buf) bytes of r into buf as io.ReadFull does, but in
// pieces (see piece), each waiting for its byte tokens, in its turn (see
// Background), before it is read: no byte is read from r before the rate
// grants it, so a file is taken from its disk or NFS mount at the rate.
// It returns the bytes read, and io.ErrUnexpectedEOF or io.EOF as
// io.ReadFull, r's error, or ctx's error when a wait is cut by ctx. Only
// the bytes read count in Report. A nil Limiter, or one without a byte
// rate, reads at once.
func (l *Limiter) ReadFull(ctx context.Context, r io.Reader, buf []byte) (int, error) {
	if l == nil {
		return io.ReadFull(r, buf)
	}
	if l.bytes == nil {
		n, err := io.ReadFull(r, buf)
		l.nBytes.Add(int64(n))
		return n, err
	}
	l.readers.Add(1)
	defer l.readers.Add(-1)
	t := l.open(ctx)
	defer l.close(t)
	done := 0
	for done < len(buf) {
		k, err := l.turn(ctx, t, min(len(buf)-done, l.piece()))
		if err != nil {
			return done, err
		}
		if err := l.wait(ctx, l.bytes, k, t); err != nil {
			return done, err
		}
		n, err := io.ReadFull(r, buf[done:done+k])
		l.nBytes.Add(int64(n))
		done += n
		if err != nil {
			if errors.Is(err, io.EOF) && done > 0 {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
	}
	return done, nil
}

// WaitRequest waits until one more request may start, counting it then;
// it returns ctx's error, the request uncounted, when ctx ends first.
func (l *Limiter) WaitRequest(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if l.reqs != nil {
		if err := l.wait(ctx, l.reqs, 1, nil); err != nil {
			return err
		}
	}
	l.nReqs.Add(1)
	return nil
}

// wait takes n tokens of b (n at most its burst), waiting for them; t is
// the transfer taking byte tokens, nil for requests.
func (l *Limiter) wait(ctx context.Context, b *rate.Limiter, n int, t *transfer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := b.ReserveN(time.Now(), n)
	d := r.Delay()
	if d <= 0 {
		if t != nil {
			l.mu.Lock()
			t.moved = time.Now()
			l.mu.Unlock()
		}
		return nil
	}
	l.startWait(t)
	defer l.endWait(t)
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

// startWait and endWait bracket a wait, for Waited; t, when not nil, is
// the transfer waiting for byte tokens the rate holds back.
func (l *Limiter) startWait(t *transfer) {
	l.mu.Lock()
	if l.waiting == 0 {
		l.waitStart = time.Now()
	}
	l.waiting++
	if t != nil {
		t.waiting = true
	}
	l.mu.Unlock()
}

func (l *Limiter) endWait(t *transfer) {
	l.mu.Lock()
	l.waiting--
	now := time.Now()
	if l.waiting == 0 {
		l.waited += now.Sub(l.waitStart)
	}
	if t != nil {
		t.waiting = false
		t.held, t.moved = now, now
		l.changedLocked()
	}
	l.mu.Unlock()
}

// Waited returns the wall time so far during which some read or request
// was held back by the limits (several at once count once): close to the
// run's time when the limit, not the store, set the pace.
func (l *Limiter) Waited() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.waited
	if l.waiting > 0 {
		w += time.Since(l.waitStart)
	}
	return w
}

// Reader returns rc limited: each Read takes at most a piece of the rate
// (see piece) and then waits for the bytes it read, so bytes are taken from the source
// no faster than the rate as they arrive. A wait cut by ctx returns the
// bytes read with ctx's error. A nil Limiter or one without a byte rate
// returns rc counting its bytes only.
func (l *Limiter) Reader(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	if l == nil {
		return rc
	}
	l.readers.Add(1)
	r := &reader{ctx: ctx, rc: rc, l: l}
	if l.bytes != nil {
		r.t = l.open(ctx)
	}
	return r
}

// FileReader returns rc limited as Reader does, but each piece waits for
// its bytes before it is read, so no byte is read from rc (a file on a
// disk or NFS mount) before the rate grants it; only the bytes read count
// in Report. A wait cut by ctx returns 0 bytes with ctx's error. A nil
// Limiter or one without a byte rate returns rc counting its bytes only.
func (l *Limiter) FileReader(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	r := l.Reader(ctx, rc)
	if lr, ok := r.(*reader); ok {
		lr.first = true
	}
	return r
}

type reader struct {
	ctx    context.Context
	rc     io.ReadCloser
	l      *Limiter
	t      *transfer // nil without a byte rate
	first  bool      // wait before reading (FileReader), not after
	closed atomic.Bool
}

func (r *reader) Read(p []byte) (int, error) {
	if r.l.bytes != nil {
		if k := r.l.piece(); len(p) > k {
			p = p[:k]
		}
	}
	if r.first && r.t != nil {
		if len(p) == 0 {
			return r.rc.Read(p)
		}
		k, err := r.l.turn(r.ctx, r.t, len(p))
		if err != nil {
			return 0, err
		}
		if err := r.l.wait(r.ctx, r.l.bytes, k, r.t); err != nil {
			return 0, err
		}
		n, err := r.rc.Read(p[:k])
		r.l.nBytes.Add(int64(n))
		return n, err
	}
	n, err := r.rc.Read(p)
	if r.t == nil {
		r.l.nBytes.Add(int64(n))
		return n, err
	}
	if n > 0 {
		if werr := r.l.waitBytes(r.ctx, r.t, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (r *reader) Close() error {
	if !r.closed.Swap(true) {
		r.l.readers.Add(-1)
		if r.t != nil {
			r.l.close(r.t)
		}
	}
	return r.rc.Close()
}

// Report is what the limits were and did in a run, for reports (JSON and
// text).
type Report struct {
	// BytesPerSecond is the byte rate limit; 0: none.
	BytesPerSecond int64 `json:"bytes-per-second"`
	// Burst is the byte burst in bytes; 0 without a byte rate.
	Burst int64 `json:"burst-bytes"`
	// RequestsPerSecond is the request rate limit; 0: none.
	RequestsPerSecond float64 `json:"requests-per-second"`
	// Bytes and Requests count what went through the limiter: the bytes
	// and requests granted, not those still waiting when a run stopped.
	Bytes    int64 `json:"bytes"`
	Requests int64 `json:"requests"`
	// WaitSeconds is Waited: the wall time some read or request waited.
	WaitSeconds float64 `json:"wait-seconds"`
}

// Report returns the limits and what went through them so far; nil for a
// nil Limiter.
func (l *Limiter) Report() *Report {
	if l == nil {
		return nil
	}
	return &Report{BytesPerSecond: l.limits.BytesPerSecond, Burst: l.limits.Burst, RequestsPerSecond: l.limits.RequestsPerSecond,
		Bytes: l.nBytes.Load(), Requests: l.nReqs.Load(), WaitSeconds: math.Round(l.Waited().Seconds()*1000) / 1000}
}
