package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// ErrCannotReplace is wrapped by a backup's error when a chunk already in
// the store is damaged and the store cannot replace it
// (chunkstore.ChunkReplacer): the new snapshot would not be restorable.
var ErrCannotReplace = errors.New("the store cannot replace a damaged chunk")

// vouch checks the stored chunk for d, which the store says it has, before
// the snapshot counts on it: it is read and, unless it is byte for byte
// blob, the blob this backup would write (nil when not encoded yet),
// decoded as a restore decodes it (crypt mode, CRC, AES-GCM with the
// backup's key, length (length bytes of plaintext) and digest). A size
// differing from blob's proves nothing by itself (another writer may
// compress otherwise) but is said in the error of a copy that fails. It
// returns the stored bytes and why they are damaged (nil when good); err is
// set when the chunk could not be read for a cause that says nothing about
// it (store unreachable, denied), and ErrNotFound when it is gone
// meanwhile. The stored bytes are read into buf (one of the writer's
// outBufs, or nil) when it is large enough.
func (w *writer) vouch(ctx context.Context, d crypto.Digest, length int, blob, buf []byte) (old []byte, damage, err error) {
	old, err = w.store.ReadChunk(ctx, d, buf[:0], chunkstore.ChunkLimit(length))
	switch {
	case errors.Is(err, chunkstore.ErrEmpty), errors.Is(err, chunkstore.ErrTooLarge):
		return nil, err, nil
	case err != nil:
		return nil, nil, err
	case blob != nil && bytes.Equal(old, blob):
		return old, nil, nil
	}
	dec, out, err := w.decoders.get()
	if err != nil {
		return nil, nil, err
	}
	plain, damage := dec.DecodeChunk(out[:0], old, d, length, w.opts.Key != nil, w.opts.Key)
	if cap(plain) > cap(out) {
		out = plain
	}
	w.decoders.put(dec, out)
	if damage != nil && blob != nil && len(old) != len(blob) {
		damage = fmt.Errorf("%w (stored %d bytes, the new chunk is %d)", damage, len(old), len(blob))
	}
	return old, damage, nil
}

// heal replaces the damaged stored chunk old for d with blob
// (chunkstore.ChunkReplacer: the damaged copy is kept aside as
// "<digest>.N.bad") and counts it in Stats.Replaced.
func (w *writer) heal(ctx context.Context, d crypto.Digest, old, blob []byte, damage error) error {
	r, ok := w.store.(chunkstore.ChunkReplacer)
	if !ok {
		return fmt.Errorf("chunk %s: %s: stored copy damaged (%v): %w", d, w.store.ChunkLocation(d), damage, ErrCannotReplace)
	}
	aside, err := r.ReplaceChunk(ctx, d, old, blob)
	if err != nil {
		return fmt.Errorf("chunk %s: stored copy damaged (%v), replacing it: %w", d, damage, err)
	}
	w.stats.Replaced.Add(1)
	w.mu.Lock()
	w.replaced = append(w.replaced, Replaced{Digest: d, Location: w.store.ChunkLocation(d), Aside: aside, Damage: damage.Error()})
	w.mu.Unlock()
	return nil
}

// Replaced is one damaged chunk a backup found in the store and replaced.
type Replaced struct {
	Digest   crypto.Digest
	Location string // the chunk's file or object
	Aside    string // where the damaged copy was kept ("" when none was)
	Damage   string // what was wrong with it
}

// decoderPool keeps chunk decoders for reuse by concurrent writers, each
// with the buffer it decodes into (as many as decodes ran at once, at most
// one per job).
type decoderPool struct {
	mu   sync.Mutex
	free []*chunkstore.Decoder
	outs [][]byte
}

// get returns a free decoder, or a new one, and its plaintext buffer (nil
// with a new one).
func (p *decoderPool) get() (*chunkstore.Decoder, []byte, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		d, out := p.free[n-1], p.outs[n-1]
		p.free, p.outs = p.free[:n-1], p.outs[:n-1]
		p.mu.Unlock()
		return d, out, nil
	}
	p.mu.Unlock()
	d, err := chunkstore.NewDecoder()
	return d, nil, err
}

// put hands d back for reuse, with the buffer out it decoded into.
func (p *decoderPool) put(d *chunkstore.Decoder, out []byte) {
	p.mu.Lock()
	p.free = append(p.free, d)
	p.outs = append(p.outs, out)
	p.mu.Unlock()
}
