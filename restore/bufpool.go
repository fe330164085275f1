package restore

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
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

// hugePage is the size of a transparent huge page on amd64 and arm64 (4 KiB
// base pages).
const hugePage = 2 << 20

// newBufPool maps n buffers of at least size bytes each (rounded up to
// Alignment). Pages are only backed by memory once touched. With huge, the
// buffers start on a huge-page boundary and the mapping asks for
// transparent huge pages (where the system allows them on request): fewer
// page faults and TLB misses while a chunk is decoded and hashed, and fewer
// pages to pin for its O_DIRECT write. Only for buffers that are filled
// whole: a huge page is backed in full once any byte of it is touched.
func newBufPool(n, size int, huge bool) (*bufPool, error) {
	size = alignUp(size)
	length := n * size
	if huge {
		length += hugePage
	}
	mem, err := unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d buffers of %d bytes: %w", n, size, err)
	}
	p := &bufPool{mem: mem, free: make(chan []byte, n), size: size}
	bufs := mem
	if huge {
		skip := int(-uintptr(unsafe.Pointer(&mem[0])) & (hugePage - 1))
		bufs = mem[skip : skip+n*size]
		unix.Madvise(bufs, unix.MADV_HUGEPAGE) // advice only: small pages work too
	}
	for i := 0; i < n; i++ {
		p.free <- bufs[i*size : (i+1)*size : (i+1)*size]
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

// setCounts applies Run's defaults to the counts of jobs, fetchers and
// writers.
func (o *Options) setCounts() {
	if o.Jobs <= 0 {
		o.Jobs = DefaultJobs()
	}
	if o.Fetchers <= 0 {
		o.Fetchers = o.Jobs
	}
	o.Writers = max(o.Writers, 0)
}

// newPools maps the pipeline's two buffer pools for opts (counts set) and
// chunks of at most maxChunk bytes. Both pools' buffers have one size, so
// that a job can hand the buffer of an uncompressed chunk, decoded in
// place, to the writers and put its unused decode buffer in the encoded
// chunks' pool instead (see rawAt): the pools keep their counts.
func newPools(opts Options, maxChunk int) (raw, data *bufPool, err error) {
	// The largest blob of a chunk (ChunkLimit) read at rawAt, with room
	// to join its GCM tag; at least maxChunk for a decoded chunk.
	size := rawAt(opts.Encrypted) + maxChunk + chunkstore.EncryptedHeaderSize + crypto.TagSize
	// Encoded chunks: enough buffers for every fetcher to have a read in
	// flight, or for every job to have a chunk decoding and one queued,
	// whichever is more. They fill their buffers only in part (compressed),
	// so small pages; decoded chunks fill theirs whole, so huge pages.
	raw, err = newBufPool(max(opts.Fetchers, 2*opts.Jobs)+2, size, false)
	if err != nil {
		return nil, nil, err
	}
	// Decoded chunks: one per job, and per writer one being written and one
	// queued for it.
	data, err = newBufPool(opts.Jobs+2*opts.Writers, size, true)
	if err != nil {
		raw.close()
		return nil, nil, err
	}
	return raw, data, nil
}

// FirstTouch maps the buffers Run maps for opts (Jobs, Writers, Fetchers
// and Encrypted, with Run's defaults) and chunks of at most maxChunk
// bytes, writes one byte in every 4 KiB page of them — the first touch of
// each page, which a restore pays once per run, however much it restores
// — and unmaps them. It returns the bytes touched, or the error of the
// mapping. It is for benchmarks, which report that fixed cost apart from
// the cost per restored byte.
func FirstTouch(opts Options, maxChunk int) (int64, error) {
	opts.setCounts()
	raw, data, err := newPools(opts, maxChunk)
	if err != nil {
		return 0, err
	}
	defer raw.close()
	defer data.close()
	var n int64
	for _, p := range []*bufPool{raw, data} {
		for range cap(p.free) {
			b := p.get(nil)
			b = b[:cap(b)]
			for i := 0; i < len(b); i += Alignment {
				b[i] = 1
			}
			n += int64(len(b))
		}
	}
	return n, nil
}
