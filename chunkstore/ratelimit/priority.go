package ratelimit

import (
	"context"
	"time"
)

// yieldAfter is how long after a demanded read last waited for the byte
// rate a background read (Background) still leaves the tokens to demanded
// reads: long enough to span the gap between the pieces of one transfer and
// between one chunk's request and the next.
const yieldAfter = 200 * time.Millisecond

type backgroundKey struct{}

// Background returns ctx marked as background work (read-ahead): the bytes
// read under it (WaitBytes, Reader, Transport) take the byte rate only when
// no demanded read (one under an unmarked context) waits for it or waited
// within the last 200 ms, and then in pieces of about 1/16 s of the rate,
// so that a demanded read arriving meanwhile waits little. Demanded reads
// are thus served first whatever the number of background reads; a
// background read may wait for as long as demanded reads keep the rate
// busy, or until ctx ends. The request rate is not affected.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx is marked by Background.
func IsBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}

// yield waits until a background read may take byte tokens: no demanded
// read waits for them and none did within yieldAfter. It returns ctx's
// error when ctx ends first. The time it waits counts as waited.
func (l *Limiter) yield(ctx context.Context) error {
	started := false
	defer func() {
		if started {
			l.endWait(false)
		}
	}()
	for {
		l.mu.Lock()
		d := yieldAfter
		if l.demandWaiting == 0 {
			d = yieldAfter - time.Since(l.demandLast)
		}
		l.mu.Unlock()
		if d <= 0 {
			return nil
		}
		if !started {
			started = true
			l.startWait(false)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
