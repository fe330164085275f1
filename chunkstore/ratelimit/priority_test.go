package ratelimit

import (
	"context"
	"fmt"
	"io"
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
		bctx, _ := Background(ctx)
		go pump(bctx, &background)
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
	bctx, _ := Background(context.Background())
	ctx2, cancel2 := context.WithTimeout(bctx, 5*time.Second)
	defer cancel2()
	if err := lim.WaitBytes(ctx2, 64<<10); err != nil {
		t.Errorf("background read without demand: %v", err)
	}
}

// countingBody is an endless body counting the bytes read from it.
type countingBody struct{ n *atomic.Int64 }

func (b countingBody) Read(p []byte) (int, error) { b.n.Add(int64(len(p))); return len(p), nil }
func (countingBody) Close() error                 { return nil }

// TestOldestFirst: under a byte rate, concurrent transfers do not share it
// evenly (all finishing together at the end): the oldest takes it, so they
// complete one after another, in the order they opened.
func TestOldestFirst(t *testing.T) {
	const readers, size = 8, 64 << 10
	lim, err := New(Limits{BytesPerSecond: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var read [readers]atomic.Int64
	rcs := make([]io.ReadCloser, readers)
	for i := range rcs {
		rcs[i] = lim.Reader(ctx, countingBody{&read[i]})
	}
	done := make(chan int, readers)
	for i, rc := range rcs {
		go func() {
			defer rc.Close()
			if _, err := io.CopyN(io.Discard, rc, size); err != nil {
				t.Error(err)
			}
			done <- i
		}()
	}
	first := <-done
	var others int64
	for i := range read {
		if i != first {
			others += min(read[i].Load(), size)
		}
	}
	order := []int{first}
	for range readers - 1 {
		order = append(order, <-done)
	}
	t.Logf("completion order %v; others had read %d bytes when the first completed", order, others)
	if first != 0 {
		t.Errorf("reader %d completed first, want 0 (the oldest)", first)
	}
	if others > 2*size {
		t.Errorf("when the first transfer completed the others had read %d bytes (of %d): want the rate given to one at a time", others, (readers-1)*size)
	}
}

// TestBackgroundOrderAndPromote: background transfers take the rate in the
// order they were marked, whatever order they open in; a promoted one goes
// before every background one.
func TestBackgroundOrderAndPromote(t *testing.T) {
	for _, promote := range []bool{false, true} {
		lim, err := New(Limits{BytesPerSecond: 256 << 10})
		if err != nil {
			t.Fatal(err)
		}
		const n, size = 4, 64 << 10
		ctxs := make([]context.Context, n)
		promotes := make([]func(), n)
		for i := range ctxs {
			ctxs[i], promotes[i] = Background(context.Background())
		}
		if promote {
			promotes[n-1]()
			if IsBackground(ctxs[n-1]) {
				t.Fatal("promoted context still background")
			}
		}
		done := make(chan int, n)
		for i := n - 1; i >= 0; i-- { // opened last to first
			rc := lim.Reader(ctxs[i], countingBody{new(atomic.Int64)})
			go func() {
				defer rc.Close()
				io.CopyN(io.Discard, rc, size)
				done <- i
			}()
		}
		var order []int
		for range n {
			order = append(order, <-done)
		}
		want := []int{0, 1, 2, 3}
		if promote {
			want = []int{3, 0, 1, 2}
		}
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Errorf("promote %v: completion order %v, want %v", promote, order, want)
		}
	}
}
