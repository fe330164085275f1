package chunkstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// TestDecodeChunkAllocs: the shared chunk check allocates nothing with a
// destination large enough, plain and encrypted.
func TestDecodeChunkAllocs(t *testing.T) {
	data := bytes.Repeat([]byte("pbsdirect chunk "), 4096)
	var key [crypto.KeySize]byte
	key[0] = 7
	cc, err := crypto.NewConfig(key)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, c := range []struct {
		name string
		cc   *crypto.Config
	}{{"plain", nil}, {"encrypted", cc}} {
		blob, err := enc.Encode(data, c.cc, true)
		if err != nil {
			t.Fatal(err)
		}
		blob = append(make([]byte, 0, len(blob)+crypto.TagSize), blob...)
		digest := c.cc.ChunkDigest(data)
		dst := make([]byte, 0, len(data))
		if _, err := dec.DecodeChunk(dst, blob, digest, len(data), c.cc != nil, c.cc); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := testing.AllocsPerRun(20, func() {
			if _, err := dec.DecodeChunk(dst, blob, digest, len(data), c.cc != nil, c.cc); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per DecodeChunk, want 0", c.name, n)
		}
		other := digest
		other[0] ^= 1
		if _, err := dec.DecodeChunk(dst, blob, other, len(data), c.cc != nil, c.cc); !errors.Is(err, ErrDigestMismatch) {
			t.Errorf("%s: wrong digest: %v, want ErrDigestMismatch", c.name, err)
		}
		if _, err := dec.DecodeChunk(dst, blob, digest, len(data)-1, c.cc != nil, c.cc); err == nil {
			t.Errorf("%s: wrong length accepted", c.name)
		}
		if _, err := dec.DecodeChunk(dst, blob, digest, len(data), c.cc == nil, c.cc); !errors.Is(err, ErrCryptModeMismatch) {
			t.Errorf("%s: wrong crypt mode: %v, want ErrCryptModeMismatch", c.name, err)
		}
	}
}
