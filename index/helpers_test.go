package index

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func mustDigest(t testing.TB, s string) crypto.Digest {
	t.Helper()
	d, err := crypto.ParseDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func hex32(t testing.TB, s string) [32]byte {
	return [32]byte(mustDigest(t, s))
}

// wantErr checks that err wraps want (nil want means no error).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want one wrapping %q", err, want)
	}
}
