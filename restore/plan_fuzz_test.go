package restore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// FuzzPlanFixed builds a plan from a fuzzed fixed index (every chunk size
// PBS allows, digests drawn from a small alphabet so that dedup and zero
// chunks occur) and checks that the plan covers every byte of the image
// exactly once: zero ranges plus every offset of every chunk tile [0, Size)
// without gaps or overlaps, each chunk has one length, and offsets are in
// range. Planning fails exactly when the short last chunk shares its digest
// with a full-size data chunk, and then with index.ErrBadIndex.
func FuzzPlanFixed(f *testing.F) {
	f.Add(uint8(0), uint16(3), uint16(100), []byte{0, 1, 2, 0, 1, 2})
	f.Add(uint8(0), uint16(0), uint16(1), []byte{3})
	f.Add(uint8(228), uint16(8), uint16(0), []byte{3, 3, 3, 3, 3, 3, 3, 3, 3})
	f.Add(uint8(230), uint16(1), uint16(1), []byte{3, 0})
	f.Add(uint8(225), uint16(2), uint16(7), []byte{1, 1, 1})
	var zeros [index.MaxChunkSize/index.MinChunkSize + 1]crypto.Digest // by chunk size / MinChunkSize, powers of two
	for cs := uint64(index.MinChunkSize); cs <= index.MaxChunkSize; cs *= 2 {
		zeros[cs/index.MinChunkSize] = ZeroChunkDigest(cs, nil)
	}
	f.Fuzz(func(t *testing.T, shift uint8, fullChunks uint16, tail uint16, picks []byte) {
		// 64 KiB mostly, every size up to 4 MiB for shift ≥ 224: the zero
		// digest NewPlan computes costs a hash of one chunk per input.
		cs := uint64(index.MinChunkSize)
		if shift >= 224 {
			cs <<= shift % 7
		}
		size := uint64(fullChunks%512)*cs + uint64(tail)%cs
		if size == 0 {
			return
		}
		hdr := index.FixedHeader{Size: size, ChunkSize: cs}
		zero := zeros[cs/index.MinChunkSize]
		alphabet := []crypto.Digest{zero, {1}, {2}, {}}
		ds := make([]crypto.Digest, hdr.ChunkCount())
		for i := range ds {
			if len(picks) > 0 {
				ds[i] = alphabet[int(picks[i%len(picks)])%len(alphabet)]
			}
		}
		raw, err := index.BuildFixed(hdr, ds)
		if err != nil {
			t.Fatal(err)
		}
		// One digest for chunks of two lengths: the short last chunk and a
		// full-size data chunk (full-size zero chunks become zero ranges).
		last := len(ds) - 1
		conflict := false
		if size%cs != 0 {
			for _, d := range ds[:last] {
				conflict = conflict || (d == ds[last] && d != zero)
			}
		}
		plan, _, err := planFixed(context.Background(), bufio.NewReader(bytes.NewReader(raw)), int64(len(raw)), nil)
		if conflict != (err != nil) || (err != nil && !errors.Is(err, index.ErrBadIndex)) {
			t.Fatalf("two lengths for one digest: %v, planning error: %v", conflict, err)
		}
		if err != nil {
			return
		}
		if plan.Size != size || plan.Positions != hdr.ChunkCount() {
			t.Fatalf("plan size %d positions %d, want %d %d", plan.Size, plan.Positions, size, hdr.ChunkCount())
		}
		type span struct{ off, len uint64 }
		var spans []span
		var zb uint64
		for _, z := range plan.Zero {
			spans = append(spans, span{z.Offset, z.Length})
			zb += z.Length
		}
		if zb != plan.ZeroBytes {
			t.Fatalf("ZeroBytes %d, ranges sum to %d", plan.ZeroBytes, zb)
		}
		seen := map[crypto.Digest]bool{}
		for i := range plan.Chunks {
			c := &plan.Chunks[i]
			if seen[c.Digest] {
				t.Fatalf("digest %x planned twice", c.Digest[:4])
			}
			seen[c.Digest] = true
			if c.Length <= 0 || uint64(c.Length) > cs {
				t.Fatalf("chunk length %d, chunk size %d", c.Length, cs)
			}
			for _, o := range plan.Offsets(c) {
				spans = append(spans, span{o, uint64(c.Length)})
			}
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].off < spans[j].off })
		var at uint64
		for _, s := range spans {
			if s.off != at {
				t.Fatalf("plan has a gap or overlap at %d (next span starts at %d)", at, s.off)
			}
			at += s.len
		}
		if at != size {
			t.Fatalf("plan covers %d of %d bytes", at, size)
		}
		if plan.DataBytes()+plan.ZeroBytes != size {
			t.Fatalf("DataBytes %d + ZeroBytes %d != %d", plan.DataBytes(), plan.ZeroBytes, size)
		}
	})
}
