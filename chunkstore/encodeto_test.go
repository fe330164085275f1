package chunkstore

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// TestEncodeTo: encoding into a reused buffer of len(data)+EncodeSlack
// builds the blob in that buffer (no new one), byte for byte what a fresh
// encode gives with the same IV, for every kind: plain and encrypted,
// compressible and not, compression on and off.
func TestEncodeTo(t *testing.T) {
	e, d := newCodec(t)
	text := bytes.Repeat([]byte("pbsdirect chunk "), 64<<10/16)
	random := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	buf := make([]byte, 0, len(random)+EncodeSlack)
	for _, data := range []struct {
		name string
		b    []byte
	}{{"text", text}, {"random", random}} {
		for _, cc := range []*crypto.Config{nil, keyA(t)} {
			for _, compress := range []bool{true, false} {
				want, err := e.encodeIV(nil, data.b, cc, compress, ivFrom(3))
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.encodeIV(buf, data.b, cc, compress, ivFrom(3))
				if err != nil {
					t.Fatal(err)
				}
				name := data.name + map[bool]string{true: " encrypted", false: " plain"}[cc != nil] + map[bool]string{true: " compress", false: ""}[compress]
				if !bytes.Equal(got, want) {
					t.Errorf("%s: blob in the reused buffer differs from a fresh one", name)
				}
				if &got[:1][0] != &buf[:1][0] {
					t.Errorf("%s: blob not built in the buffer given", name)
				}
				if pt, _, err := d.Decode(nil, got, cc, 0); err != nil || !bytes.Equal(pt, data.b) {
					t.Errorf("%s: decode: %v", name, err)
				}
			}
		}
	}
}
