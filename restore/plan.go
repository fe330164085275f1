package restore

import (
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"iter"
	"math"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// Chunk is one unique non-zero chunk of an archive: its digest, plaintext
// length in bytes, and the index positions it fills.
type Chunk struct {
	Digest crypto.Digest
	Length int
	first  int32 // head of the chunk's offset list in Plan.offs
	count  int32
}

// Range is a byte range of the image, [Offset, Offset+Length).
type Range struct {
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
}

// Plan maps a fixed index onto work (DESIGN.md "Plan"): each unique non-zero
// digest once with all its offsets, and the zero ranges that are never
// fetched. Its memory grows with the number of non-zero positions, not the
// image size: a 64 TiB sparse image with a handful of data chunks has a
// handful of entries. While entries are added it holds about 150 bytes per
// unique chunk and 12 per non-zero position, and allocates about 480 bytes
// per unique chunk in all as its map and slices grow (TestPlanMemory);
// after Finish about 60 bytes per unique chunk and 12 per position stay.
type Plan struct {
	Size       uint64 // image size in bytes
	ChunkSize  uint64 // nominal chunk size in bytes
	Positions  uint64 // index entries
	ZeroDigest crypto.Digest
	Chunks     []Chunk
	Zero       []Range // runs of consecutive full-size zero-chunk positions
	ZeroBytes  uint64  // bytes covered by Zero

	noZero   bool        // zero chunks are not recognized (encrypted archive checked without key)
	dropped  bool        // Drop removed chunks: the plan no longer covers the whole image
	byDigest digestTable // chunk index by digest, while planning
	offs     []uint64    // chunk offsets in bytes
	next     []int32     // next offset of the same chunk, -1 ends
	last     []int32     // per chunk: tail of its list, while planning
	finished bool        // Finish was called: nothing more is added
}

// Finish ends planning: it releases what only adding entries needs (the
// digest table and list tails), after which Add and AddRange fail.
// LoadPlan returns finished plans.
func (p *Plan) Finish() {
	p.byDigest, p.last, p.finished = digestTable{}, nil, true
}

// ZeroChunkDigest returns the digest of chunkSize zero bytes: SHA256(zeros)
// without a key, SHA256(zeros || id_key) with one (§7.2, §10.2).
func ZeroChunkDigest(chunkSize uint64, cc *crypto.Config) crypto.Digest {
	h := sha256.New()
	zeros := make([]byte, 64<<10)
	for n := chunkSize; n > 0; {
		k := min(n, uint64(len(zeros)))
		h.Write(zeros[:k])
		n -= k
	}
	h.Write(cc.DigestSuffix())
	var d crypto.Digest
	h.Sum(d[:0])
	return d
}

// NewPlan starts a plan for an image of size bytes in chunks of chunkSize
// bytes (0 for a dynamic index); cc selects plain or keyed zero digests. Add
// every index entry in order, then the plan is complete.
func NewPlan(size, chunkSize uint64, cc *crypto.Config) *Plan {
	return &Plan{
		Size:       size,
		ChunkSize:  chunkSize,
		ZeroDigest: zeroDigestIf(chunkSize, cc),
	}
}

// Add records fixed-index entry pos with digest d. Entries must come in
// order (pos = 0, 1, 2, …); full-size entries with the zero digest become
// zero ranges. It returns an error wrapping index.ErrBadIndex when one
// digest stands for chunks of two different lengths (possible only for a
// damaged index).
func (p *Plan) Add(pos uint64, d crypto.Digest) error {
	if p.finished {
		return fmt.Errorf("plan finished: index entry %d added afterwards", pos)
	}
	if pos != p.Positions {
		return fmt.Errorf("index entry %d out of order (want %d)", pos, p.Positions)
	}
	off := pos * p.ChunkSize
	length := min(p.ChunkSize, p.Size-off)
	if length == p.ChunkSize && d == p.ZeroDigest && !p.noZero {
		p.Positions++
		if n := len(p.Zero); n > 0 && p.Zero[n-1].Offset+p.Zero[n-1].Length == off {
			p.Zero[n-1].Length += length
		} else {
			p.Zero = append(p.Zero, Range{Offset: off, Length: length})
		}
		p.ZeroBytes += length
		return nil
	}
	return p.AddRange(off, length, d)
}

// AddRange records a chunk with digest d filling [off, off+length) bytes;
// used directly for dynamic indexes (§4), where nothing is a zero range.
func (p *Plan) AddRange(off, length uint64, d crypto.Digest) error {
	if p.finished {
		return fmt.Errorf("plan finished: chunk at %d added afterwards", off)
	}
	if len(p.offs) >= math.MaxInt32 {
		return fmt.Errorf("more than %d non-zero chunk positions: index too large to restore", math.MaxInt32)
	}
	p.Positions++
	pi := int32(len(p.offs))
	p.offs = append(p.offs, off)
	p.next = append(p.next, -1)
	ci, ok := p.byDigest.find(p.Chunks, d)
	if !ok {
		ci = int32(len(p.Chunks))
		p.byDigest.insert(p.Chunks, ci, d)
		p.Chunks = append(p.Chunks, Chunk{Digest: d, Length: int(length), first: pi, count: 1})
		p.last = append(p.last, pi)
		return nil
	}
	c := &p.Chunks[ci]
	if uint64(c.Length) != length {
		return fmt.Errorf("%w: digest %s is used for chunks of %d and %d bytes (offsets %d and %d)",
			index.ErrBadIndex, d, c.Length, length, p.offs[c.first], off)
	}
	p.next[p.last[ci]] = pi
	p.last[ci] = pi
	c.count++
	return nil
}

// DataRanges yields the byte ranges of the image not covered by zero
// ranges, in order: where chunk data is written. For a dynamic index, or an
// image without zero chunks, that is [0, Size). Nothing is allocated: a
// 64 TiB image with millions of ranges costs no memory here.
func (p *Plan) DataRanges() iter.Seq[Range] {
	return func(yield func(Range) bool) {
		at := uint64(0)
		for _, z := range p.Zero {
			if z.Offset > at && !yield(Range{Offset: at, Length: z.Offset - at}) {
				return
			}
			at = z.Offset + z.Length
		}
		if at < p.Size {
			yield(Range{Offset: at, Length: p.Size - at})
		}
	}
}

// Offsets returns the byte offsets in the image where chunk c is written.
func (p *Plan) Offsets(c *Chunk) []uint64 {
	out := make([]uint64, 0, c.count)
	for i := c.first; i >= 0; i = p.next[i] {
		out = append(out, p.offs[i])
	}
	return out
}

// DataBytes returns the number of image bytes covered by non-zero chunks.
func (p *Plan) DataBytes() uint64 { return p.Size - p.ZeroBytes }

// DedupHits returns how many positions reuse a chunk already planned.
func (p *Plan) DedupHits() uint64 { return uint64(len(p.offs) - len(p.Chunks)) }

func zeroDigestIf(chunkSize uint64, cc *crypto.Config) crypto.Digest {
	if chunkSize == 0 {
		return crypto.Digest{}
	}
	return ZeroChunkDigest(chunkSize, cc)
}

// maxChunk returns the largest chunk length in bytes.
func (p *Plan) maxChunk() int {
	m := 0
	for i := range p.Chunks {
		m = max(m, p.Chunks[i].Length)
	}
	return m
}

// Drop removes the chunks for which known returns true from the plan (for
// example chunks already verified in another archive, matched by digest and
// length) and returns how many were removed. Their offsets are then neither
// fetched nor written.
func (p *Plan) Drop(known func(*Chunk) bool) int {
	kept := p.Chunks[:0]
	for i := range p.Chunks {
		c := p.Chunks[i]
		if !known(&c) {
			kept = append(kept, c)
		}
	}
	n := len(p.Chunks) - len(kept)
	p.Chunks = kept
	if n > 0 {
		p.dropped = true
	}
	return n
}

// subset returns a copy of p with only the chunks keep selects (sharing
// p's offsets), without the zero ranges unless withZero; it does not cover
// the whole image (dropped).
func (p *Plan) subset(keep func(*Chunk) bool, withZero bool) *Plan {
	q := *p
	q.Chunks = nil
	for i := range p.Chunks {
		if keep(&p.Chunks[i]) {
			q.Chunks = append(q.Chunks, p.Chunks[i])
		}
	}
	if !withZero {
		q.Zero = nil
	}
	q.dropped = true
	return &q
}

// digestTable finds a plan's chunks by digest: an open-addressing hash
// table of chunk indexes (4 bytes a slot, at most half full) over the
// plan's Chunks, which hold the digests; a Go map would store every digest
// a second time, at about 42 bytes an entry. Digests come from the index,
// which a hostile store chooses: slots are picked with a per-process seeded
// hash, not from the digest's bytes.
type digestTable struct {
	slots []int32 // chunk index + 1; 0 is empty
	seed  maphash.Seed
	used  int
}

func (t *digestTable) slot(d crypto.Digest) int {
	return int(maphash.Comparable(t.seed, d) & uint64(len(t.slots)-1))
}

// find returns the index in chunks of the chunk with digest d.
func (t *digestTable) find(chunks []Chunk, d crypto.Digest) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	for i := t.slot(d); ; i = (i + 1) & (len(t.slots) - 1) {
		ci := t.slots[i]
		if ci == 0 {
			return 0, false
		}
		if chunks[ci-1].Digest == d {
			return ci - 1, true
		}
	}
}

// insert adds chunk index ci with digest d, which find did not find.
func (t *digestTable) insert(chunks []Chunk, ci int32, d crypto.Digest) {
	if 2*(t.used+1) > len(t.slots) {
		old := t.slots
		if len(old) == 0 {
			t.seed = maphash.MakeSeed()
		}
		t.slots = make([]int32, max(64, 2*len(old)))
		t.used = 0
		for _, c := range old {
			if c != 0 {
				t.put(c, chunks[c-1].Digest)
			}
		}
	}
	t.put(ci+1, d)
}

func (t *digestTable) put(c int32, d crypto.Digest) {
	i := t.slot(d)
	for t.slots[i] != 0 {
		i = (i + 1) & (len(t.slots) - 1)
	}
	t.slots[i] = c
	t.used++
}
