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
// Chunks loaded ahead of a reader (prefetch) take at most half the buffers
// and are evicted after chunks already read, so that they are still there
// when the reader gets to them.
type cache struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when a pin is released or a load ends
	slot    int        // bytes per buffer
	slots   int        // buffers at most
	used    int        // buffers held by entries
	unread  int        // entries loaded by prefetch and not yet read (unread set)
	misses  int64      // buffers reserved for demand reads so far
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
	pins   int   // readers copying from data; a pinned entry is never evicted
	unread bool  // loaded by prefetch and not yet asked for by get
	gen    int64 // cache.misses when prefetch started it
	// demanded, when not nil, is called when get finds the entry still
	// loading for prefetch: a reader now waits for it (see prefetch).
	demanded func()
	buf      []byte
	elem     *list.Element
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
		c.markRead(e)
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		demanded := e.demanded
		c.mu.Unlock()
		select {
		case <-e.done:
		default:
			if demanded != nil {
				demanded()
			}
			<-e.done
		}
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		return e, nil
	}
	c.misses++
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
// another prefetched entry not yet read, or half the buffers already hold
// prefetched entries not yet read (the other half is left to the reads).
// It reports whether it loaded (successfully or not). demanded, when not
// nil, is called (from get's goroutine) when a get finds the load still in
// progress: the load is then waited for, and may go faster (under a rate
// limit, a read-ahead goes after the reads asked for).
func (c *cache) prefetch(d crypto.Digest, load func(buf []byte) ([]byte, error), demanded func()) bool {
	c.mu.Lock()
	if _, ok := c.entries[d]; ok || c.unread >= max(c.slots/2, 1) || !c.reserve(false) {
		c.mu.Unlock()
		return false
	}
	e := c.start(d)
	e.demanded = demanded
	e.unread = true
	e.gen = c.misses
	c.unread++
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
// unpinned entry that has been read when all are taken, so that chunks
// read ahead are not evicted before the reader reaches them. A prefetched
// entry not yet read counts as read once more than slots demand reads
// missed the cache after it was loaded (read-ahead that no reader
// followed does not stay for ever); a demand read (demand true) evicts it
// also when nothing else can go. c.mu is held.
func (c *cache) reserve(demand bool) bool {
	if c.used < c.slots {
		c.used++
		return true
	}
	for _, anyUnread := range []bool{false, demand} {
		for el := c.lru.Back(); el != nil; el = el.Prev() {
			e := el.Value.(*entry)
			if e.pins > 0 {
				continue
			}
			if e.unread && c.misses-e.gen > int64(c.slots) {
				c.markRead(e) // stale
			}
			if !e.unread || anyUnread {
				c.markRead(e)
				c.evict(el)
				return true // its buffer passes to the new entry
			}
		}
		if !demand {
			break
		}
	}
	return false
}

// markRead clears e's unread mark. c.mu is held.
func (c *cache) markRead(e *entry) {
	if e.unread {
		e.unread = false
		c.unread--
	}
}

// evict drops the loaded entry at el and keeps its buffer. c.mu is held.
func (c *cache) evict(el *list.Element) {
	e := el.Value.(*entry)
	c.lru.Remove(el)
	delete(c.entries, e.digest)
	c.free = append(c.free, e.buf)
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
		c.markRead(e)
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
