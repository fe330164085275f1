package backup

import (
	"context"
	"errors"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// newWriter returns a writer into store with opts (Jobs and Encoders set)
// counting into stats, counting on the chunks of prev (nil: none). Its
// encoded-chunk buffers are one per job, within half of BufferBudget for
// chunks of the larger of opts.ChunkSize and DefaultDynamicChunkSize.
func newWriter(store chunkstore.WriteStore, opts Options, stats *Stats, prev *previous) *writer {
	chunk := max(int(opts.ChunkSize), DefaultDynamicChunkSize)
	w := &writer{store: store, opts: opts, stats: stats, done: map[crypto.Digest]bool{}, prev: prev,
		encoders: make(chan *chunkstore.Encoder, opts.Encoders),
		outBufs:  make(chan []byte, max(1, min(opts.Jobs, BufferBudget/2/chunk)))}
	for range cap(w.encoders) {
		w.encoders <- nil
	}
	for range cap(w.outBufs) {
		w.outBufs <- nil
	}
	return w
}

// close releases the writer's encoders and decoders; no put may run.
func (w *writer) close() {
	for range cap(w.encoders) {
		if e := <-w.encoders; e != nil {
			e.Close()
		}
	}
	for _, d := range w.decoders.free {
		d.Close()
	}
	w.decoders.free, w.decoders.outs = nil, nil
}

// encode encodes data as the blob of a chunk on one of the writer's
// encoders, into buf (a buffer from outBufs, grown when needed).
func (w *writer) encode(buf, data []byte) ([]byte, error) {
	enc := <-w.encoders
	enc, blob, err := w.encodeOn(enc, buf, data)
	w.encoders <- enc
	return blob, err
}

// encodeOn encodes data as the blob of a chunk on enc (taken from
// encoders; nil: a new one is made), into buf, grown when needed. It
// returns the encoder to hand back to encoders (nil when none could be
// made).
func (w *writer) encodeOn(enc *chunkstore.Encoder, buf, data []byte) (*chunkstore.Encoder, []byte, error) {
	if enc == nil {
		var err error
		if enc, err = chunkstore.NewEncoder(); err != nil {
			return nil, buf, err
		}
	}
	if cap(buf) < len(data)+chunkstore.EncodeSlack {
		buf = make([]byte, 0, len(data)+chunkstore.EncodeSlack)
	}
	blob, err := enc.EncodeTo(buf, data, w.opts.Key, true)
	return enc, blob, err
}

// existence is the answer of an existence check (ask): has is set when
// the store said it has the chunk, err when it could not be asked.
type existence struct {
	has bool
	err error
}

// ask starts the existence check of the chunk for d (chunkstore.HasChunk:
// a stat, a HEAD; a store that cannot tell answers "not there") and
// returns where its one answer will be sent. The channel holds it, so the
// check never waits on its reader.
func (w *writer) ask(ctx context.Context, d crypto.Digest) <-chan existence {
	answer := make(chan existence, 1)
	go func() {
		has, asked, err := chunkstore.HasChunk(ctx, w.store, d)
		answer <- existence{has: asked && has, err: err}
	}()
	return answer
}

// encodeAhead encodes data into buf (as encode) unless the existence check
// answer (nil: answered already, the chunk is not there) says first that
// the store has the chunk or could not be asked; an encoder free before
// the answer encodes ahead of it, and the answer is then waited for once
// data is released (release: data is no longer read, the blob stands for
// it). It
// returns the blob (nil when not encoded; buf on an error of the
// encoder) and the answer (zero when answered before).
func (w *writer) encodeAhead(buf, data []byte, answer <-chan existence, release func()) (blob []byte, ex existence, err error) {
	var enc *chunkstore.Encoder
	select {
	case ex = <-answer:
		answer = nil
		if ex.err != nil || ex.has {
			return nil, ex, nil
		}
		enc = <-w.encoders
	case enc = <-w.encoders:
	}
	enc, blob, err = w.encodeOn(enc, buf, data)
	w.encoders <- enc
	if err == nil {
		release()
	}
	if answer != nil {
		ex = <-answer
	}
	return blob, ex, err
}

// put stores the chunk d, whose plaintext is data, unless this run already
// handled d, doing no more work than the store needs, in this order:
//
//   - a chunk the previous snapshot lists and the writer vouches for
//     (previous.vouches) is counted (KnownPrevious): nothing compressed,
//     asked or written;
//   - a chunk the previous snapshot lists that the store has but that was
//     stamped too late to vouch for (previous.vouches: stored) is read back
//     and checked as below, not asked again, nothing compressed first;
//   - else the store is asked (chunkstore.HasChunk: a stat, a HEAD)
//     while the chunk waits for a buffer and an encoder: a chunk it has
//     is not compressed when the answer comes first, and is read back
//     and decoded (crypt mode, CRC, decryption, digest, length) before
//     it is counted (FoundPresent); when an encoder is free first, the
//     chunk is encoded (and data released) while the answer is awaited,
//     and a chunk the store has is then checked against its blob as
//     below (vouch). One found damaged is replaced (heal);
//   - else it is encoded on one of the writer's encoders into one of its
//     buffers, data is released (release, when not nil, is called once data
//     is no longer read) and the blob written, only the encoded chunk held
//     while it uploads. A chunk the write finds there after all is checked
//     as before (vouch).
//
// It counts the chunk as the zero chunk when zero is set, else as a chunk
// with data. Errors are the store's; on one, d counts as not handled.
func (w *writer) put(ctx context.Context, d crypto.Digest, data []byte, zero bool, release func()) (err error) {
	released := false
	free := func() {
		if !released && release != nil {
			released = true
			release()
		}
	}
	defer free()
	w.mu.Lock()
	if w.done[d] {
		w.mu.Unlock()
		if !zero {
			w.stats.DedupHits.Add(1)
		}
		return nil
	}
	w.done[d] = true
	w.mu.Unlock()
	defer func() {
		if err != nil {
			w.mu.Lock()
			delete(w.done, d)
			w.mu.Unlock()
		}
	}()
	length := len(data)
	vouched, stored := w.prev.vouches(ctx, d)
	if vouched {
		if !zero {
			w.stats.KnownPrevious.Add(1)
		}
		w.countExisting(zero)
		return nil
	}
	// One of outBufs is held from the read-back of a stored chunk (or from
	// the encoding) until put returns: read-backs count in the same
	// budget as uploads, whatever Jobs is. Existence checks hold none.
	var buf []byte
	held := false
	take := func() {
		if !held {
			buf, held = <-w.outBufs, true
		}
	}
	defer func() {
		if held {
			w.outBufs <- buf[:0]
		}
	}()
	var ex existence
	var blob []byte
	if stored {
		// Known from the previous snapshot and there, but stamped too
		// late to vouch for: read back and checked, not asked again.
		ex.has = true
	} else {
		// The existence check runs while the chunk waits for a buffer and
		// an encoder, and while it is encoded when an encoder is free
		// first: behind latency, the encoders never wait on a round trip.
		answer := w.ask(ctx, d)
		select {
		case buf = <-w.outBufs:
			held = true
		case ex = <-answer:
			answer = nil
		}
		if ex.err == nil && !ex.has {
			take()
			blob, ex, err = w.encodeAhead(buf, data, answer, free)
			if cap(blob) >= cap(buf) {
				buf = blob
			}
			if err != nil {
				return err
			}
		}
	}
	if ex.err != nil {
		return ex.err
	}
	var old []byte
	var damage error
	// Encoded ahead of an answer that the store has the chunk: the blob
	// is checked against the stored copy as at a write that found it.
	found := ex.has && blob != nil
	if ex.has && blob == nil {
		// Answered before it was encoded: the stored chunk is read back
		// into buf and decoded.
		take()
		old, damage, err = w.vouch(ctx, d, length, nil, buf)
		if damage == nil && cap(old) > cap(buf) {
			buf = old // grown by the read: kept for the next chunk
		}
		switch {
		case err == nil && damage == nil:
			if !zero {
				w.stats.FoundPresent.Add(1)
			}
			w.countExisting(zero)
			return nil
		case errors.Is(err, chunkstore.ErrNotFound):
			err = nil // gone meanwhile: written
		case err != nil:
			return err
		}
		into := buf
		if damage != nil {
			into = nil // buf holds the damaged copy (old) until healed
		}
		blob, err = w.encode(into, data)
		if damage == nil && cap(blob) >= cap(buf) {
			buf = blob
		}
		if err != nil {
			return err
		}
	}
	free()
	existed := found
	if damage != nil {
		err = w.heal(ctx, d, old, blob, damage)
	} else if !found {
		existed, err = w.store.WriteChunk(ctx, d, blob)
	}
	if damage == nil && err == nil && existed {
		// Never count on a stored chunk unchecked: bit rot keeps its size.
		old, damage, err = w.vouch(ctx, d, length, blob, nil)
		switch {
		case errors.Is(err, chunkstore.ErrNotFound):
			// Gone meanwhile (garbage collection): write it.
			existed, err = w.store.WriteChunk(ctx, d, blob)
		case err == nil && damage != nil:
			existed, err = false, w.heal(ctx, d, old, blob, damage)
		}
	}
	if err != nil {
		return err
	}
	if existed {
		if found && !zero {
			w.stats.FoundPresent.Add(1)
		}
		w.countExisting(zero)
		return nil
	}
	w.lastWrite.Store(time.Now().UnixNano())
	if zero {
		w.stats.ZeroUploaded.Add(1)
	} else {
		w.stats.Uploaded.Add(1)
	}
	w.stats.UploadedBytes.Add(uint64(len(blob)))
	return nil
}

// countExisting counts a chunk found in the store: the zero chunk when zero
// is set, else a chunk with data.
func (w *writer) countExisting(zero bool) {
	if zero {
		w.stats.ZeroExisting.Add(1)
	} else {
		w.stats.Existing.Add(1)
	}
}

// settle waits, on a store that tells when chunks were written
// (chunkstore.ModTimer) in steps finer than a second (a directory's
// coarse-clock file times, GCS's milliseconds), until the times it gives
// can tell the chunks this backup wrote from its manifest, written next: a
// step of the store's time resolution after the last chunk write, by this
// machine's clock (and settleMargin), at most some tens of milliseconds.
// The next backup then vouches for them without reading them back
// (previous.vouches: written strictly before the manifest). On a store
// stamping whole seconds (S3) it does not wait (half a second on average):
// there each object carries the writer's time too
// (chunkstore.WriterStamper), which orders the chunks stamped in the
// manifest's second (stampedBefore). It returns early, with ctx's
// error, when ctx ends.
func (w *writer) settle(ctx context.Context) error {
	mt, ok := w.store.(chunkstore.ModTimer)
	last := w.lastWrite.Load()
	if !ok || last == 0 {
		return nil
	}
	r := mt.ModTimeResolution()
	if r >= time.Second {
		return nil
	}
	// File times come from a coarse clock that lags this one by up to a
	// tick: a margin past the step.
	wait := time.Until(time.Unix(0, last).Truncate(r).Add(r + settleMargin))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settleMargin is added to settle's wait: a file system's time stamps lag
// the system clock by up to a timer tick (1 to 10 ms).
const settleMargin = 20 * time.Millisecond
