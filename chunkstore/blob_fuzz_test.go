package chunkstore

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the DataBlob decoder, with and without
// a key and with small size limits. The decoder must never panic, never
// return more than the limit, never return data together with an error,
// never modify the blob's bytes, and must refuse encrypted kinds without a key.
func FuzzDecode(f *testing.F) {
	for _, v := range []string{vecUncompressed, vecEncrypted, vecCompressed, vecEncrCompr, vecZero4MiB} {
		f.Add(unhex(f, v), false, uint32(0), false)
		f.Add(unhex(f, v), true, uint32(0), true)
		f.Add(unhex(f, v), true, uint32(49), false)
	}
	f.Add(plainBlob(MagicCompressed, rleFrame(300<<10, false)), false, uint32(4096), false)
	f.Add(plainBlob(MagicCompressed, rleFrame(8<<10, true)), false, uint32(4096), true)
	f.Add([]byte{}, false, uint32(0), false)
	ka := keyA(f)
	d, err := NewDecoder()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, blob []byte, useKey bool, maxSize uint32, spare bool) {
		// Keep limits small so one input cannot make the fuzzer allocate much.
		limit := int(maxSize % (1 << 20))
		if limit == 0 {
			limit = 1 << 20
		}
		orig := append([]byte(nil), blob...)
		in := orig[:len(orig):len(orig)]
		if spare {
			in = append(make([]byte, 0, len(orig)+64), orig...)
		}
		cc := ka
		if !useKey {
			cc = nil
		}
		out, k, err := d.Decode(nil, in, cc, limit)
		if !bytes.Equal(in[:len(orig)], orig) {
			t.Fatalf("Decode modified the blob")
		}
		if err != nil {
			if out != nil {
				t.Fatalf("Decode returned %d bytes with error %v", len(out), err)
			}
			if k.Encrypted() && cc == nil && !errors.Is(err, ErrNoKey) && !errors.Is(err, ErrCRC) {
				t.Fatalf("encrypted blob without key: %v", err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("Decode returned %d bytes, limit %d", len(out), limit)
		}
		if k.Encrypted() && cc == nil {
			t.Fatalf("encrypted blob decoded without a key")
		}
		kk, kerr := Kind(orig)
		if kerr != nil || kk != k {
			t.Fatalf("Decode kind %v, Kind() = %v, %v", k, kk, kerr)
		}
		if k == KindUncompressed && !bytes.Equal(out, orig[PlainHeaderSize:]) {
			t.Fatalf("uncompressed blob: plaintext differs from payload")
		}
		// Decoding twice (into a reused buffer) gives the same result.
		out2, _, err := d.Decode(make([]byte, 0, len(out)), append([]byte(nil), orig...), cc, limit)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("second decode differs: %v", err)
		}
	})
}
