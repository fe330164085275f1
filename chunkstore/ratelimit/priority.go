package ratelimit

import (
	"context"
	"sync/atomic"
	"time"
)

// The byte rate goes to one transfer at a time, in order: demanded reads
// before background ones (Background), and among each the oldest first
// (the Reader opened, or the WaitBytes call begun, first). So under a low
// rate chunks complete one after another, instead of all of them together
// at the end, and a read-ahead does not slow the reads asked for. A
// transfer yields only to earlier ones that are held back by the rate (they
// wait for it, or did within yieldAfter): when the store, not the rate,
// sets the pace, every transfer takes what is left. A transfer that yielded
// for keepAlive takes one piece (see piece), so that each limited reader
// still moves well inside a bucket's --io-timeout.
const (
	// yieldAfter spans the gap between the pieces of one transfer, and
	// between one chunk's request and the next.
	yieldAfter = 200 * time.Millisecond
	// keepAlive is the longest a transfer yields before it takes a piece.
	keepAlive = time.Second
)

type backgroundKey struct{}

// background is the mark Background puts on a context.
type background struct {
	since    time.Time   // when marked: its place among background work
	promoted atomic.Bool // set by the promote function: demanded now
}

// Background returns ctx marked as background work (read-ahead): the bytes
// read under it (WaitBytes, Reader, Transport) take the byte rate only when
// no demanded read (one under an unmarked context) is held back by it, but
// for a piece every second (see the order above); background transfers go
// in the order they were marked. Calling promote (any number of times,
// from any goroutine) makes the work demanded from then on, in its place
// by the time it was marked: for a read-ahead a reader now waits for. The
// request rate is not affected.
func Background(ctx context.Context) (bctx context.Context, promote func()) {
	b := &background{since: time.Now()}
	return context.WithValue(ctx, backgroundKey{}, b), func() { b.promoted.Store(true) }
}

// IsBackground reports whether ctx is marked by Background and not
// promoted since.
func IsBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(*background)
	return b != nil && !b.promoted.Load()
}

// transfer is one reader's or WaitBytes call's place in the order. Its
// fields other than bg and seq are guarded by Limiter.mu.
type transfer struct {
	bg      *background // the Background mark of its context; nil: demanded
	since   time.Time   // when marked Background, or else opened
	seq     int64       // opening order
	waiting bool        // waiting for byte tokens the rate holds back
	held    time.Time   // when its last wait for held-back tokens ended
	moved   time.Time   // when it last took tokens (or opened)
}

// background reports whether t is background work (not promoted).
func (t *transfer) background() bool { return t.bg != nil && !t.bg.promoted.Load() }

// before reports whether t goes before u.
func (t *transfer) before(u *transfer) bool {
	if tb, ub := t.background(), u.background(); tb != ub {
		return ub
	}
	if !t.since.Equal(u.since) {
		return t.since.Before(u.since)
	}
	return t.seq < u.seq
}

// open registers a transfer under ctx.
func (l *Limiter) open(ctx context.Context) *transfer {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	now := time.Now()
	t := &transfer{seq: l.seq, since: now, moved: now}
	if b, _ := ctx.Value(backgroundKey{}).(*background); b != nil {
		t.bg, t.since = b, b.since
	}
	if l.transfers == nil {
		l.transfers = map[*transfer]struct{}{}
	}
	l.transfers[t] = struct{}{}
	return t
}

// close removes t from the order.
func (l *Limiter) close(t *transfer) {
	l.mu.Lock()
	delete(l.transfers, t)
	l.changedLocked()
	l.mu.Unlock()
}

// changedLocked wakes the transfers yielding (turn). l.mu is held.
func (l *Limiter) changedLocked() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// turn waits until t may take byte tokens, and returns how many it may
// take now: k, or at most a piece when it takes its keepAlive piece. It
// returns ctx's error when ctx ends first. The time it yields counts as
// waited.
func (l *Limiter) turn(ctx context.Context, t *transfer, k int) (int, error) {
	yielding := false
	defer func() {
		if yielding {
			l.endWait(nil)
		}
	}()
	for {
		l.mu.Lock()
		now := time.Now()
		lapse := time.Duration(0) // until the earliest hold before t lapses
		for u := range l.transfers {
			if u == t || !u.before(t) {
				continue
			}
			d := yieldAfter
			if !u.waiting {
				d = u.held.Add(yieldAfter).Sub(now)
			}
			if d > 0 && (lapse == 0 || d < lapse) {
				lapse = d
			}
		}
		if lapse == 0 {
			l.mu.Unlock()
			return k, nil
		}
		alive := t.moved.Add(keepAlive).Sub(now)
		if alive <= 0 {
			l.mu.Unlock()
			return min(k, l.piece()), nil
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		if !yielding {
			yielding = true
			l.startWait(nil)
		}
		tm := time.NewTimer(min(lapse, alive))
		select {
		case <-tm.C:
		case <-ch:
			tm.Stop()
		case <-ctx.Done():
			tm.Stop()
			return 0, ctx.Err()
		}
	}
}
