package archive

import (
	"container/list"
	"sync"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// cache keeps decoded chunks by digest, bounded in bytes: every entry,
// loaded or loading, holds one buffer of slot bytes (the archive's largest
// chunk), and at most budget / slot of them exist. Buffers of evicted
// entries are reused, so the cache makes no garbage once full. Each chunk is
// loaded once under concurrent demand: later callers wait for the first
// load (restic's bloblru with single flight). Failed loads are not kept.
type cache struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when a pin is released or a load ends
	slot    int        // bytes per buffer
	slots   int        // buffers at most
	used    int        // buffers held by entries
	free    [][]byte   // buffers of evicted entries
	entries map[crypto.Digest]*entry
	lru     list.List // loaded entries, most recently used at the front
}

// entry is one chunk: loading until done is closed, then data or err.
type entry struct {
	digest crypto.Digest
	data   []byte
	err    error
	done   chan struct{}
	pins   int  // readers copying from data; a pinned entry is never evicted
	unread bool // loaded by prefetch and not yet asked for by get
	buf    []byte
	elem   *list.Element
}

// newCache returns a cache of slots buffers of slot bytes each.
func newCache(slot, slots int) *cache {
	c := &cache{slot: slot, slots: max(slots, 1), entries: make(map[crypto.Digest]*entry)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// get returns the pinned entry for d, loading it with load (into a buffer
// of slot bytes capacity) unless it is loaded or loading; it waits for a
// free buffer when every one is pinned or loading. Release the entry after
// use. A failed load returns its error to every waiter and is not kept.
func (c *cache) get(d crypto.Digest, load func(buf []byte) ([]byte, error)) (*entry, error) {
	c.mu.Lock()
	if e, ok := c.entries[d]; ok {
		e.pins++
		e.unread = false
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		<-e.done
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		return e, nil
	}
	for !c.reserve(true) {
		c.cond.Wait()
	}
	e := c.start(d)
	e.pins = 1
	c.mu.Unlock()
	c.finish(e, load)
	if e.err != nil {
		c.release(e)
		return nil, e.err
	}
	return e, nil
}

// prefetch loads d in the background caller's goroutine unless it is loaded
// or loading, or no buffer is free without waiting and without evicting
// another prefetched entry not yet read. It reports whether it loaded
// (successfully or not).
func (c *cache) prefetch(d crypto.Digest, load func(buf []byte) ([]byte, error)) bool {
	c.mu.Lock()
	if _, ok := c.entries[d]; ok || !c.reserve(false) {
		c.mu.Unlock()
		return false
	}
	e := c.start(d)
	e.unread = true
	c.mu.Unlock()
	c.finish(e, load)
	return true
}

// has reports whether d is loaded or loading.
func (c *cache) has(d crypto.Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[d]
	return ok
}

// reserve takes a buffer for a new entry, evicting the least recently used
// unpinned entry when all are taken; for read-ahead (demand false) one
// that has been read, so that read-ahead never evicts chunks read ahead
// for a reader that has not reached them yet. c.mu is held.
func (c *cache) reserve(demand bool) bool {
	if c.used < c.slots {
		c.used++
		return true
	}
	for el := c.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*entry)
		if e.pins == 0 && (demand || !e.unread) {
			c.lru.Remove(el)
			delete(c.entries, e.digest)
			c.free = append(c.free, e.buf)
			return true // its buffer passes to the new entry
		}
	}
	return false
}

// start makes the loading entry for d with a reserved buffer. c.mu is held.
func (c *cache) start(d crypto.Digest) *entry {
	e := &entry{digest: d, done: make(chan struct{})}
	if n := len(c.free); n > 0 {
		e.buf = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		e.buf = make([]byte, 0, c.slot)
	}
	c.entries[d] = e
	return e
}

// finish runs load for e and publishes the result.
func (c *cache) finish(e *entry, load func(buf []byte) ([]byte, error)) {
	data, err := load(e.buf[:0])
	c.mu.Lock()
	if err != nil {
		e.err = err
		delete(c.entries, e.digest)
		c.free = append(c.free, e.buf)
		c.used--
	} else {
		e.data = data
		e.elem = c.lru.PushFront(e)
	}
	close(e.done)
	c.cond.Broadcast()
	c.mu.Unlock()
}

// release unpins e.
func (c *cache) release(e *entry) {
	c.mu.Lock()
	e.pins--
	if e.pins == 0 {
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}
