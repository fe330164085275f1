package progress

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"
)

// TestLine: PBS 4.2.3's line form, IEC units, the rate over the
// bytes done.
func TestLine(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		done, total int64
		el          time.Duration
		want        string
	}{
		{6 * gib, 10 * gib, time.Minute, "progress 60% (6 GiB of 10 GiB in 1m, 102.4 MiB/s)"},
		{0, 10 * gib, 10 * time.Second, "progress 0% (0 B of 10 GiB in 10s, 0 B/s)"},
		{3 << 20, 4 << 20, 1500 * time.Millisecond, "progress 75% (3 MiB of 4 MiB in 2s, 2 MiB/s)"},
		{10 * gib, 10 * gib, 2*time.Hour + 5*time.Minute, "progress 100% (10 GiB of 10 GiB in 2h 5m, 1.4 MiB/s)"},
		{512, 0, time.Second, "progress 100% (512 B of 0 B in 1s, 512 B/s)"},
	} {
		if got := Line(c.done, c.total, c.el); got != c.want {
			t.Errorf("Line(%d, %d, %v) = %q, want %q", c.done, c.total, c.el, got, c.want)
		}
	}
}

// TestLineLoop: with a fake clock, one line per tick with the bytes
// done at that tick, none after stop.
func TestLineLoop(t *testing.T) {
	var w bytes.Buffer
	var done atomic.Int64
	start := time.Unix(1000, 0)
	var now atomic.Int64
	tick := make(chan time.Time)
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		LineLoop(&w, "restore", 10<<30, done.Load, start, tick, func() time.Time { return time.Unix(now.Load(), 0) }, stop, nil)
		close(finished)
	}()
	for i, d := range []int64{1 << 30, 6 << 30} {
		done.Store(d)
		now.Store(1000 + 60*int64(i+1))
		tick <- time.Time{}
	}
	close(stop)
	<-finished
	want := "restore: progress 10% (1 GiB of 10 GiB in 1m, 17.1 MiB/s)\nrestore: progress 60% (6 GiB of 10 GiB in 2m, 51.2 MiB/s)\n"
	if w.String() != want {
		t.Fatalf("lines:\n%s\nwant:\n%s", w.String(), want)
	}
}
