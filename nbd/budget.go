package nbd

import (
	"errors"
	"sync"
)

// budget is the read buffers of all a Server's connections: the buffers
// in use and those kept free for reuse stay within Server.MaxBufferBytes.
// Reads are admitted first come, first served: one that does not fit
// waits, and the reads behind it wait too (a large read is not starved
// by smaller ones), except those of a connection over its share, which
// are passed over until it has returned buffers.
type budget struct {
	mu    sync.Mutex
	bufs  [14][][]byte // free read buffers by capacity class, 4 KiB << class
	held  int64        // bytes of buffers in use and free
	inUse int64        // bytes of buffers in use
	free  int64        // bytes of free buffers kept
	queue []*bufWaiter // reads waiting for a buffer, oldest first
	conns int          // connections in transmission
}

// bufShare is one connection's part of the budget; guarded by budget.mu.
type bufShare struct {
	inUse int64 // bytes of buffers the connection holds
}

// bufWaiter is one read waiting for its buffer.
type bufWaiter struct {
	share *bufShare
	n     int   // bytes asked for
	class int   // capacity class, 4 KiB << class
	size  int64 // bytes counted: the class's capacity
	buf   []byte
	ready chan struct{} // closed once buf is set
}

// errConnDone is returned by getBuf for a connection that ended while its
// read waited.
var errConnDone = errors.New("connection ended while a read waited for a buffer")

// bufClass returns the capacity class of a read buffer of n bytes: its
// capacity is 4096 << class.
func bufClass(n int) int {
	cl := 0
	for 4096<<cl < n {
		cl++
	}
	return cl
}

func (s *Server) bufLimit() int64 {
	if s.MaxBufferBytes <= 0 {
		return DefaultBufferBytes
	}
	return s.MaxBufferBytes
}

// joinBudget counts a connection in transmission: while more than one
// is, each may hold at most half of MaxBufferBytes (its first buffer
// excepted), so that one client cannot take all the buffers.
func (s *Server) joinBudget() *bufShare {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	b.conns++
	return &bufShare{}
}

// leaveBudget undoes joinBudget once the connection's reads have ended;
// the reads of a connection left alone may then take the whole budget.
func (s *Server) leaveBudget() {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	b.conns--
	s.admit()
}

// getBuf returns a read buffer of n bytes (n ≤ 32 MiB) for the connection
// holding sh, reusing a free one of its capacity class (reads make no
// garbage once the buffers exist). The read waits, in arrival order, until
// the buffers in use leave room for it under MaxBufferBytes and its
// connection is within its share; a buffer larger than the bound is handed
// out when no other is in use. It returns errConnDone, and no buffer, if
// done is closed first.
func (s *Server) getBuf(sh *bufShare, n int, done <-chan struct{}) ([]byte, error) {
	cl := bufClass(n)
	w := &bufWaiter{share: sh, n: n, class: cl, size: int64(4096) << cl, ready: make(chan struct{})}
	b := &s.budget
	b.mu.Lock()
	b.queue = append(b.queue, w)
	s.admit()
	b.mu.Unlock()
	select {
	case <-w.ready:
		return w.buf, nil
	case <-done:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.buf != nil { // admitted meanwhile: give it back
		s.release(sh, w.buf)
		return nil, errConnDone
	}
	for i, q := range b.queue {
		if q == w {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	s.admit() // the reads behind it may fit now
	return nil, errConnDone
}

// putBuf returns a buffer from getBuf: it is kept for reuse, still counted
// against MaxBufferBytes, and the reads waiting are admitted as they fit.
func (s *Server) putBuf(sh *bufShare, buf []byte) {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	s.release(sh, buf)
}

// release is putBuf with budget.mu held.
func (s *Server) release(sh *bufShare, buf []byte) {
	b := &s.budget
	cl := bufClass(cap(buf))
	size := int64(4096) << cl
	b.inUse -= size
	sh.inUse -= size
	b.bufs[cl] = append(b.bufs[cl], buf)
	b.free += size
	s.admit()
}

// admit hands buffers to the waiting reads, oldest first, while they fit:
// a read that does not fit stops the reads behind it, a read whose
// connection is over its share (half the bound, while other connections
// are in transmission) is passed over. budget.mu is held.
func (s *Server) admit() {
	b := &s.budget
	limit := s.bufLimit()
	share := limit / 2
	q := b.queue[:0]
	blocked := false
	for _, w := range b.queue {
		switch {
		case blocked:
		case w.share.inUse > 0 && b.conns > 1 && w.share.inUse+w.size > share:
		case b.inUse > 0 && b.inUse+w.size > limit:
			blocked = true
		default:
			s.grant(w, limit)
			continue
		}
		q = append(q, w)
	}
	clear(b.queue[len(q):])
	b.queue = q
}

// grant gives w its buffer: a free one of its class, else a new one once
// free buffers of other classes (the largest first) have made room for
// it. budget.mu is held.
func (s *Server) grant(w *bufWaiter, limit int64) {
	b := &s.budget
	b.inUse += w.size
	w.share.inUse += w.size
	if k := len(b.bufs[w.class]); k > 0 {
		w.buf = b.bufs[w.class][k-1][:w.n]
		b.bufs[w.class][k-1] = nil
		b.bufs[w.class] = b.bufs[w.class][:k-1]
		b.free -= w.size
	} else {
		for b.held+w.size > limit && s.dropFree() {
		}
		b.held += w.size
		w.buf = make([]byte, w.n, w.size)
	}
	close(w.ready)
}

// dropFree lets one free buffer go (the largest class first) and reports
// whether there was one. budget.mu is held.
func (s *Server) dropFree() bool {
	b := &s.budget
	for cl := len(b.bufs) - 1; cl >= 0; cl-- {
		if k := len(b.bufs[cl]); k > 0 {
			b.bufs[cl][k-1] = nil
			b.bufs[cl] = b.bufs[cl][:k-1]
			size := int64(4096) << cl
			b.free -= size
			b.held -= size
			return true
		}
	}
	return false
}
