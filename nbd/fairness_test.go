package nbd_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/nbd"
)

// appendRead appends an NBD_CMD_READ request to b.
func appendRead(b []byte, cookie, off uint64, length uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, 0x25609513)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, 0) // NBD_CMD_READ
	b = binary.BigEndian.AppendUint64(b, cookie)
	b = binary.BigEndian.AppendUint64(b, off)
	return binary.BigEndian.AppendUint32(b, length)
}

// hog connects to the export "disk" and sends reads reads of size bytes
// whose replies it never reads.
func hog(t *testing.T, sock string, reads int, size uint32) *rawClient {
	t.Helper()
	rc := dial(t, sock)
	if typ := rc.goExport("disk"); typ != 1 {
		t.Fatalf("GO disk: reply %#x", typ)
	}
	var b []byte
	for i := range reads {
		b = appendRead(b, uint64(i), uint64(i)*uint64(size), size)
	}
	rc.write(b)
	return rc
}

// waitIdle waits until pe has not been asked for a read for a second:
// every request is reading, blocked writing its reply or waiting for a
// buffer.
func waitIdle(pe *pinExport) {
	last, stable := -1, 0
	for deadline := time.Now().Add(20 * time.Second); stable < 10 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		_, n := pe.state()
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
}

// TestBufferShareStalledClient: a client that sends reads and never reads
// the replies takes at most half of the read buffers while another client
// is connected, and that client's reads are served at once, not after the
// stalled client's write timeout. Before, the stalled client held the
// whole budget and the other client waited until it disconnected.
func TestBufferShareStalledClient(t *testing.T) {
	const size = 4 << 20
	pe := &pinExport{}
	srv := &nbd.Server{MaxBufferBytes: 16 << 20, Exports: []nbd.Export{{Name: "disk", Size: 64 << 20, Data: pe}}}
	sock := serve(t, srv)
	good := dial(t, sock)
	if typ := good.goExport("disk"); typ != 1 {
		t.Fatalf("GO disk: reply %#x", typ)
	}
	hog(t, sock, 8, size)
	waitIdle(pe)
	for i := range 4 {
		// rawClient.read fails after 10 s: a hang, not a measured bound.
		if e := good.request(0, uint64(i)*size, size, nil); e != 0 {
			t.Fatalf("read %d: error %d", i, e)
		}
		if got := good.read(size); !bytes.Equal(got, make([]byte, size)) {
			t.Fatalf("read %d: not zeros", i)
		}
	}
}

// TestWriteTimeoutClosesStalledClient: a lone client that never reads its
// replies holds the whole budget until its reply is not written within
// Server.WriteTimeout; then its connection is closed, that is logged
// naming the client, and its buffers serve a read of the whole budget
// from another client. Before, the connection stayed open and kept its
// buffers until the client went away.
func TestWriteTimeoutClosesStalledClient(t *testing.T) {
	const bound = 16 << 20
	pe := &pinExport{}
	logs := make(chan string, 16)
	srv := &nbd.Server{
		MaxBufferBytes: bound,
		WriteTimeout:   300 * time.Millisecond,
		Exports:        []nbd.Export{{Name: "disk", Size: 64 << 20, Data: pe}},
		Log: func(msg string) {
			select {
			case logs <- msg:
			default:
			}
		},
	}
	sock := serve(t, srv)
	h := hog(t, sock, 8, 4<<20)
	select {
	case msg := <-logs:
		if !strings.HasPrefix(msg, "client") || !strings.Contains(msg, "replies not read within 300ms") {
			t.Errorf("log line %q: want the client and the write timeout", msg)
		}
	case <-time.After(20 * time.Second): // a hang, not a measured bound
		t.Fatal("the stalled connection was not closed")
	}
	// The stalled client reads what reached its socket, then the end.
	h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, h.c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("stalled client's connection still open: %v", err)
	}
	rc := dial(t, sock)
	if typ := rc.goExport("disk"); typ != 1 {
		t.Fatalf("GO disk: reply %#x", typ)
	}
	if e := rc.request(0, 0, bound, nil); e != 0 {
		t.Fatalf("read of the whole budget: error %d", e)
	}
	if got := rc.read(bound); !bytes.Equal(got, make([]byte, bound)) {
		t.Error("read of the whole budget: not zeros")
	}
}

// relayExport serves zeros. A read smaller than 1 MiB lasts until the
// next small read has started, or 50 ms: while small reads keep coming,
// one of them is always in progress (holds a buffer).
type relayExport struct {
	small atomic.Int64 // small reads started
	mu    sync.Mutex
	next  chan struct{} // closed when the next small read starts
}

func newRelayExport() *relayExport { return &relayExport{next: make(chan struct{})} }

func (e *relayExport) ReadAt(b []byte, off int64) (int, error) {
	if len(b) < 1<<20 {
		e.small.Add(1)
		e.mu.Lock()
		close(e.next)
		next := make(chan struct{})
		e.next = next
		e.mu.Unlock()
		select {
		case <-next:
		case <-time.After(50 * time.Millisecond):
		}
	}
	clear(b)
	return len(b), nil
}

// TestLargeReadNotStarved: while four connections keep four reads of 64
// KiB each in flight, one of them always in progress, a read of the whole
// 1 MiB budget is served: the small reads that come after it wait for it.
// Before, a waiting read took the first room it saw, so the small reads
// always came first and the large one waited for ever.
func TestLargeReadNotStarved(t *testing.T) {
	const (
		small    = 64 << 10
		conns    = 4
		inFlight = 4
	)
	ex := newRelayExport()
	srv := &nbd.Server{MaxBufferBytes: 1 << 20, Exports: []nbd.Export{{Name: "disk", Size: 4 << 20, Data: ex}}}
	sock := serve(t, srv)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	errs := make(chan error, conns)
	for range conns {
		rc := dial(t, sock)
		if typ := rc.goExport("disk"); typ != 1 {
			t.Fatalf("GO disk: reply %#x", typ)
		}
		wg.Go(func() { errs <- keepReading(rc.c, small, inFlight, stop) })
	}
	for deadline := time.Now().Add(10 * time.Second); ex.small.Load() < 100 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	rc := dial(t, sock)
	if typ := rc.goExport("disk"); typ != 1 {
		t.Fatalf("GO disk: reply %#x", typ)
	}
	// rawClient.read fails after 10 s: a hang, not a measured bound.
	if e := rc.request(0, 0, 1<<20, nil); e != 0 {
		t.Fatalf("1 MiB read: error %d", e)
	}
	rc.read(1 << 20)
	select {
	case err := <-errs:
		t.Fatalf("small reads: %v", err)
	default:
	}
}

// keepReading keeps inFlight reads of size bytes in flight on c until stop
// is closed, then reads the replies still due.
func keepReading(c net.Conn, size uint32, inFlight int, stop <-chan struct{}) error {
	var b []byte
	for i := range inFlight {
		b = appendRead(b, uint64(i), uint64(i)*uint64(size), size)
	}
	if _, err := c.Write(b); err != nil {
		return err
	}
	reply := make([]byte, 16+size)
	for due := inFlight; due > 0; due-- {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, reply); err != nil {
			return err
		}
		if e := binary.BigEndian.Uint32(reply[4:]); e != 0 {
			return errors.New("read failed")
		}
		select {
		case <-stop:
			continue
		default:
		}
		cookie := binary.BigEndian.Uint64(reply[8:])
		if _, err := c.Write(appendRead(nil, cookie, cookie*uint64(size), size)); err != nil {
			return err
		}
		due++
	}
	return nil
}
