package chunkstore

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// withSpare returns a copy of blob with spare crypto.TagSize bytes of
// capacity (spare) or none.
func withSpare(blob []byte, spare bool) []byte {
	n := len(blob)
	if spare {
		n += crypto.TagSize
	}
	return append(make([]byte, 0, n), blob...)
}

// within reports whether p starts inside buf's capacity.
func within(p, buf []byte) bool {
	if len(p) == 0 || cap(buf) == 0 {
		return false
	}
	a, b := uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return a >= b && a < b+uintptr(cap(buf))
}

// TestDecodeInPlaceVectors: the FORMAT.md §10 vectors decode in place to
// exactly Decode's plaintext and kind; an uncompressed blob's plaintext is
// a slice of the blob itself (decrypted over itself when encrypted and
// there is room to join the tag), a compressed one's is decoded into dst.
func TestDecodeInPlaceVectors(t *testing.T) {
	_, d := newCodec(t)
	tests := []struct {
		name   string
		blob   string
		cc     *crypto.Config
		kind   BlobKind
		want   []byte
		digest string
	}{
		{"uncompressed", vecUncompressed, nil, KindUncompressed, dataD(), digestD},
		{"compressed", vecCompressed, nil, KindCompressed, dataD(), digestD},
		{"encrypted", vecEncrypted, keyA(t), KindEncrypted, dataD(), digestDKeyA},
		{"encrypted-compressed", vecEncrCompr, keyA(t), KindEncryptedCompressed, dataD(), digestDKeyA},
		{"zero-4MiB", vecZero4MiB, nil, KindCompressed, make([]byte, 4<<20), digestZero4M},
	}
	for _, tt := range tests {
		for _, spare := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/exact", true: "/spare"}[spare]
			t.Run(name, func(t *testing.T) {
				pristine := unhex(t, tt.blob)
				blob := withSpare(pristine, spare)
				dst := make([]byte, 0, len(tt.want))
				pt, k, err := d.DecodeInPlace(dst, blob, tt.cc, 0)
				if err != nil || k != tt.kind {
					t.Fatalf("DecodeInPlace = kind %v, %v; want %v", k, err, tt.kind)
				}
				if !bytes.Equal(pt, tt.want) {
					t.Fatalf("DecodeInPlace = %d bytes %.32x…, want %d bytes", len(pt), pt, len(tt.want))
				}
				switch {
				case tt.kind.Compressed():
					if !within(pt, dst) {
						t.Fatal("compressed plaintext not decoded into dst")
					}
				case !tt.kind.Encrypted() || spare:
					if !within(pt, blob) || &pt[0] != &blob[tt.kind.HeaderSize()] {
						t.Fatal("uncompressed plaintext copied instead of returned where it lies in the blob")
					}
				}
				// The chunk check in place: the same digest passes.
				digest, err := crypto.ParseDigest(tt.digest)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.DecodeChunkInPlace(make([]byte, 0, len(tt.want)), withSpare(pristine, spare), digest, len(tt.want), tt.kind.Encrypted(), tt.cc)
				if err != nil || !bytes.Equal(got, tt.want) {
					t.Fatalf("DecodeChunkInPlace: %d bytes, %v", len(got), err)
				}
			})
		}
	}
}

// TestDecodeInPlaceErrors: every blob Decode refuses (truncated, bad
// magic, CRC, wrong key or tag, corrupt frame, too large) DecodeInPlace
// refuses with the same error and message, with and without spare
// capacity.
func TestDecodeInPlaceErrors(t *testing.T) {
	_, d := newCodec(t)
	for _, tt := range decodeErrorCases(t) {
		for _, spare := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/exact", true: "/spare"}[spare]
			t.Run(name, func(t *testing.T) {
				_, _, want := d.Decode(nil, withSpare(tt.blob, spare), tt.cc, tt.maxSize)
				pt, _, err := d.DecodeInPlace(make([]byte, 0, 64), withSpare(tt.blob, spare), tt.cc, tt.maxSize)
				if !errors.Is(err, tt.want) {
					t.Fatalf("DecodeInPlace error = %v, want %v", err, tt.want)
				}
				if pt != nil {
					t.Fatalf("DecodeInPlace returned %d bytes with an error", len(pt))
				}
				if want == nil || err.Error() != want.Error() {
					t.Fatalf("DecodeInPlace error %q, Decode's %v", err, want)
				}
			})
		}
	}
}

// chunkCase is a 4 MiB chunk of one blob kind, encoded.
type chunkCase struct {
	name string
	data []byte
	blob []byte
	cc   *crypto.Config
}

// chunkCases encodes a random (stored uncompressed) and a text-like
// (compressed) 4 MiB chunk, plain and encrypted with key A.
func chunkCases(t *testing.T) []chunkCase {
	e, _ := newCodec(t)
	random, text := randomBytes(4<<20, 7), textLike(4<<20, 7)
	var cs []chunkCase
	for _, c := range []struct {
		name string
		data []byte
		cc   *crypto.Config
		kind BlobKind
	}{
		{"uncompressed", random, nil, KindUncompressed},
		{"compressed", text, nil, KindCompressed},
		{"encrypted", random, keyA(t), KindEncrypted},
		{"encrypted-compressed", text, keyA(t), KindEncryptedCompressed},
	} {
		blob, err := e.Encode(c.data, c.cc, true)
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := Kind(blob); k != c.kind {
			t.Fatalf("%s: encoded as %v", c.name, k)
		}
		cs = append(cs, chunkCase{c.name, c.data, blob, c.cc})
	}
	return cs
}

// TestDecodeChunkInPlaceMatchesDecodeChunk: for every blob kind, intact
// and damaged (payload byte flipped with the CRC fixed, tag flipped,
// truncated, wrong digest, wrong length, wrong crypt mode),
// DecodeChunkInPlace passes or fails exactly as DecodeChunk does: the same
// plaintext, the same error.
func TestDecodeChunkInPlaceMatchesDecodeChunk(t *testing.T) {
	_, d := newCodec(t)
	for _, c := range chunkCases(t) {
		digest := c.cc.ChunkDigest(c.data)
		enc := c.cc != nil
		k, _ := Kind(c.blob)
		hs := k.HeaderSize()
		mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), c.blob...)) }
		var other crypto.Digest
		other[0] = 1
		tests := []struct {
			name      string
			blob      []byte
			digest    crypto.Digest
			length    int
			encrypted bool
			want      error
		}{
			{"intact", c.blob, digest, len(c.data), enc, nil},
			{"payload-flip-crc-fixed", withCRC(mut(func(b []byte) []byte { b[hs+100] ^= 1; return b })), digest, len(c.data), enc,
				map[bool]error{false: ErrDigestMismatch, true: ErrDecrypt}[enc]},
			{"payload-flip", mut(func(b []byte) []byte { b[hs+100] ^= 1; return b }), digest, len(c.data), enc, ErrCRC},
			{"truncated", c.blob[:len(c.blob)-1], digest, len(c.data), enc, ErrCRC},
			{"truncated-header", c.blob[:hs-1], digest, len(c.data), enc, ErrTruncated},
			{"wrong-digest", c.blob, other, len(c.data), enc, ErrDigestMismatch},
			{"wrong-length", c.blob, digest, len(c.data) - 1, enc, ErrTooLarge},
			{"wrong-crypt-mode", c.blob, digest, len(c.data), !enc, ErrCryptModeMismatch},
		}
		if enc {
			tests = append(tests, struct {
				name      string
				blob      []byte
				digest    crypto.Digest
				length    int
				encrypted bool
				want      error
			}{"tag-flip", mut(func(b []byte) []byte { b[40] ^= 1; return b }), digest, len(c.data), enc, ErrDecrypt})
		}
		for _, tt := range tests {
			for _, spare := range []bool{false, true} {
				name := c.name + "/" + tt.name + map[bool]string{false: "/exact", true: "/spare"}[spare]
				t.Run(name, func(t *testing.T) {
					want, wantErr := d.DecodeChunk(make([]byte, 0, len(c.data)), withSpare(tt.blob, spare), tt.digest, tt.length, tt.encrypted, c.cc)
					got, err := d.DecodeChunkInPlace(make([]byte, 0, len(c.data)), withSpare(tt.blob, spare), tt.digest, tt.length, tt.encrypted, c.cc)
					if tt.want == nil {
						if wantErr != nil || err != nil {
							t.Fatalf("DecodeChunk: %v; DecodeChunkInPlace: %v", wantErr, err)
						}
						if !bytes.Equal(got, c.data) || !bytes.Equal(want, c.data) {
							t.Fatal("plaintext differs from the chunk's data")
						}
						return
					}
					if !errors.Is(err, tt.want) || !errors.Is(wantErr, tt.want) {
						t.Fatalf("DecodeChunkInPlace error %v, DecodeChunk's %v; want %v", err, wantErr, tt.want)
					}
					if err.Error() != wantErr.Error() || got != nil {
						t.Fatalf("DecodeChunkInPlace error %q (%d bytes), DecodeChunk's %q", err, len(got), wantErr)
					}
				})
			}
		}
	}
}

// TestDecodeChunkInPlaceAllocs: decoding a chunk in place into a reused
// buffer allocates nothing, whatever its kind, also when every chunk's
// zstd frame is larger than the one before (a decrypted frame needs no
// buffer of its own that would have to grow).
func TestDecodeChunkInPlaceAllocs(t *testing.T) {
	_, d := newCodec(t)
	const runs = 8
	for _, c := range chunkCases(t) {
		t.Run(c.name, func(t *testing.T) {
			digest := c.cc.ChunkDigest(c.data)
			work := make([]byte, 0, len(c.blob)+crypto.TagSize)
			dst := make([]byte, 0, len(c.data))
			allocs := testing.AllocsPerRun(runs, func() {
				work = append(work[:0], c.blob...)
				if _, err := d.DecodeChunkInPlace(dst, work, digest, len(c.data), c.cc != nil, c.cc); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > 0 {
				t.Fatalf("%.1f allocations per decoded chunk, want 0", allocs)
			}
		})
	}
	t.Run("growing-encrypted-frames", func(t *testing.T) {
		e, _ := newCodec(t)
		cc := keyA(t)
		// Chunks whose frames grow: more random bytes in each.
		type chunk struct {
			blob   []byte
			digest crypto.Digest
		}
		var chunks []chunk
		text, random := textLike(4<<20, 9), randomBytes(4<<20, 9)
		for i := range runs + 1 {
			data := append(append([]byte(nil), random[:(i+1)*64<<10]...), text[(i+1)*64<<10:]...)
			blob, err := e.Encode(data, cc, true)
			if err != nil {
				t.Fatal(err)
			}
			if k, _ := Kind(blob); k != KindEncryptedCompressed {
				t.Fatalf("chunk %d encoded as %v", i, k)
			}
			if i > 0 && len(blob) <= len(chunks[i-1].blob) {
				t.Fatalf("chunk %d: frame does not grow", i)
			}
			chunks = append(chunks, chunk{blob, cc.ChunkDigest(data)})
		}
		work := make([]byte, 0, len(chunks[runs].blob)+crypto.TagSize)
		dst := make([]byte, 0, 4<<20)
		i := 0
		allocs := testing.AllocsPerRun(runs, func() {
			c := chunks[i]
			i++
			work = append(work[:0], c.blob...)
			if _, err := d.DecodeChunkInPlace(dst, work, c.digest, 4<<20, true, cc); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Fatalf("%.1f allocations per decoded chunk, want 0", allocs)
		}
	})
}
