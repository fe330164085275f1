package nbd_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/nbd"
)

// pinExport serves zeros and sums the bytes of the reads it was asked
// for: with clients that never read their replies, each of those reads
// keeps its buffer, so the sum is what the server holds.
type pinExport struct {
	mu    sync.Mutex
	bytes int64
	reads int
}

func (p *pinExport) ReadAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	p.bytes += int64(len(b))
	p.reads++
	p.mu.Unlock()
	clear(b)
	return len(b), nil
}

func (p *pinExport) state() (int64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes, p.reads
}

// TestBufferBudgetHostileClients: ten connections each send eight reads
// of 4 MiB and never read a reply. The read buffers of all connections
// together stay within Server.MaxBufferBytes (the other reads wait), and
// once those clients are gone a read larger than the whole bound is still
// served. Before, each connection had its eight buffers: 320 MiB for a
// 16 MiB bound.
func TestBufferBudgetHostileClients(t *testing.T) {
	const (
		bound = 16 << 20
		conns = 10
		reads = 8
		size  = 4 << 20
	)
	pe := &pinExport{}
	srv := &nbd.Server{MaxBufferBytes: bound, Exports: []nbd.Export{{Name: "disk", Size: 64 << 20, Data: pe}}}
	sock := serve(t, srv)
	var hogs []*rawClient
	for range conns {
		hogs = append(hogs, hog(t, sock, reads, size))
	}
	waitIdle(pe)
	held, n := pe.state()
	if held > bound {
		t.Fatalf("%d reads of %d bytes buffered at once by %d connections that read no reply: %d MiB, bound %d MiB",
			n, size, conns, held>>20, bound>>20)
	}
	if n == 0 {
		t.Fatal("no read served at all")
	}
	for _, h := range hogs {
		h.c.Close()
	}
	// A read larger than the bound is served, alone, once the hogs are gone.
	rc := dial(t, sock)
	if typ := rc.goExport("disk"); typ != 1 {
		t.Fatalf("GO disk: reply %#x", typ)
	}
	if e := rc.request(0, 0, 32<<20, nil); e != 0 {
		t.Fatalf("32 MiB read: error %d", e)
	}
	if got := rc.read(32 << 20); !bytes.Equal(got, make([]byte, 32<<20)) {
		t.Error("32 MiB read: not zeros")
	}
}
