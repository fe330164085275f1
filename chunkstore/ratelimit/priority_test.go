package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackgroundYields: while a demanded read keeps the byte rate busy,
// background reads (read-ahead) get next to none of it, however many they
// are; once demand stops, they get the rate.
func TestBackgroundYields(t *testing.T) {
	lim, err := New(Limits{BytesPerSecond: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var demand, background atomic.Int64
	var wg sync.WaitGroup
	pump := func(ctx context.Context, n *atomic.Int64) {
		defer wg.Done()
		for lim.WaitBytes(ctx, 16<<10) == nil {
			n.Add(16 << 10)
		}
	}
	for range 4 {
		wg.Add(1)
		go pump(Background(ctx), &background)
	}
	wg.Add(1)
	go pump(ctx, &demand)
	time.Sleep(1500 * time.Millisecond)
	cancel()
	wg.Wait()
	d, b := demand.Load(), background.Load()
	t.Logf("demand %d bytes, background %d bytes", d, b)
	if d < 4*b || d == 0 {
		t.Errorf("demanded read got %d bytes, background reads %d: want demand served first", d, b)
	}

	// Without demand, background reads move.
	ctx2, cancel2 := context.WithTimeout(Background(context.Background()), 5*time.Second)
	defer cancel2()
	if err := lim.WaitBytes(ctx2, 64<<10); err != nil {
		t.Errorf("background read without demand: %v", err)
	}
}
