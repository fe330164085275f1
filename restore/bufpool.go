package restore

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Alignment is the buffer and O_DIRECT alignment in bytes.
const Alignment = 4096

// bufPool is a fixed set of page-aligned buffers carved out of one anonymous
// mapping, outside the Go heap. Its size bounds the pipeline's memory: a
// goroutine that needs a buffer waits until one is returned.
type bufPool struct {
	mem  []byte
	free chan []byte
	size int
}

func alignUp(n int) int { return (n + Alignment - 1) &^ (Alignment - 1) }

// newBufPool maps n buffers of at least size bytes each (rounded up to
// Alignment). Pages are only backed by memory once touched.
func newBufPool(n, size int) (*bufPool, error) {
	size = alignUp(size)
	mem, err := unix.Mmap(-1, 0, n*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d buffers of %d bytes: %w", n, size, err)
	}
	// Transparent huge pages where the system allows them (madvise mode):
	// fewer page faults, TLB misses and page pins for O_DIRECT writes of
	// 4 MiB chunks. Advice only; its failure changes nothing else.
	unix.Madvise(mem, unix.MADV_HUGEPAGE)
	p := &bufPool{mem: mem, free: make(chan []byte, n), size: size}
	for i := 0; i < n; i++ {
		p.free <- mem[i*size : (i+1)*size : (i+1)*size]
	}
	return p, nil
}

// get returns a free buffer (len 0, cap size), or nil when done is closed first.
func (p *bufPool) get(done <-chan struct{}) []byte {
	select {
	case b := <-p.free:
		return b[:0]
	case <-done:
		return nil
	}
}

// put returns a buffer obtained from get; b may have been resliced.
func (p *bufPool) put(b []byte) { p.free <- b[:0:p.size] }

// close unmaps the buffers; none may be in use.
func (p *bufPool) close() { unix.Munmap(p.mem) }
