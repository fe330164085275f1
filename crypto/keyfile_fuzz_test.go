package crypto

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzKeyFile: ParseKeyFile never panics on any JSON, and Open of whatever
// parses either fails or yields a config whose fingerprint matches the
// stored one. Expensive KDF parameters are capped before Open so one input
// cannot stall the fuzzer (the code's own bound is 1025 MiB of scrypt memory).
func FuzzKeyFile(f *testing.F) {
	var key [KeySize]byte
	for i := range key {
		key[i] = byte(i)
	}
	now := time.Unix(1700000000, 0)
	plain, _ := NewKeyFile(key, KDFNone, nil, now)
	b, _ := plain.Marshal()
	f.Add(b, "")
	pb := &KeyFile{KDF: &KDF{PBKDF2: &PBKDF2Params{Iter: 3, Salt: []byte("salt")}}, Created: "x", Modified: "x"}
	if err := pb.seal(key, []byte("hello"), [IVSize]byte{1}); err != nil {
		f.Fatal(err)
	}
	b, _ = pb.Marshal()
	f.Add(b, "hello")
	sc := &KeyFile{KDF: &KDF{Scrypt: &ScryptParams{N: 4, R: 1, P: 1, Salt: []byte("s")}}}
	if err := sc.seal(key, []byte("hello"), [IVSize]byte{2}); err != nil {
		f.Fatal(err)
	}
	b, _ = sc.Marshal()
	f.Add(b, "hello")
	if real, err := os.ReadFile(filepath.Join("..", "testdata", "keys", "official-pbkdf2.key")); err == nil {
		f.Add(real, "wrong")
	}
	f.Add([]byte(`{"kdf":{"Scrypt":{"n":4294967296,"r":1048576,"p":1048576,"salt":""}},"data":"`+string(make([]byte, 0))+`"}`), "x")
	f.Add([]byte(`{"kdf":{"scrypt":{}},"data":""}`), "")
	f.Add([]byte(`{"kdf":null,"data":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","fingerprint":"zz"}`), "")
	f.Fuzz(func(t *testing.T, data []byte, pass string) {
		kf, err := ParseKeyFile(data)
		if err != nil {
			if kf != nil {
				t.Fatal("key file with error")
			}
			return
		}
		if kf.KDF != nil {
			if (kf.KDF.Scrypt == nil) == (kf.KDF.PBKDF2 == nil) {
				t.Fatalf("KDF enum with %v/%v accepted", kf.KDF.Scrypt, kf.KDF.PBKDF2)
			}
			if s := kf.KDF.Scrypt; s != nil && (s.N > 1<<10 || s.R > 8 || s.P > 4) {
				return // valid but slow: the cost bound is checked in TestFuzzScryptBound
			}
			if p := kf.KDF.PBKDF2; p != nil && p.Iter > 1000 {
				return
			}
		}
		_, cfg, err := kf.Open(context.Background(), []byte(pass))
		if err != nil {
			if cfg != nil {
				t.Fatal("config with error")
			}
			return
		}
		if kf.Fingerprint != "" {
			fp, err := ParseFingerprint(kf.Fingerprint)
			if err != nil || fp != cfg.Fingerprint() {
				t.Fatalf("Open accepted fingerprint %q for key %s", kf.Fingerprint, cfg.Fingerprint())
			}
		}
		out, err := kf.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("Marshal produced invalid JSON")
		}
		if _, err := ParseKeyFile(out); err != nil {
			t.Fatalf("reparse: %v", err)
		}
	})
}

// TestFuzzScryptBound: scrypt parameters beyond the 1025 MiB bound are
// refused before any work (they would abort the process inside scrypt.Key),
// whatever their size, including values that overflow naive products.
func TestFuzzScryptBound(t *testing.T) {
	for _, p := range []ScryptParams{
		{N: 1 << 32, R: 1 << 20, P: 1 << 20},
		{N: 1 << 63, R: 1, P: 1},
		{N: 1 << 24, R: 1, P: 1},
		{N: 2, R: 1 << 21, P: 1},
		{N: 2, R: 8, P: 1 << 21},
		{N: 1 << 62, R: 1 << 20, P: 1 << 20},
		{N: 1 << 32, R: 2, P: 1},
	} {
		kf := &KeyFile{KDF: &KDF{Scrypt: &p}, Data: make([]byte, IVSize+TagSize+KeySize)}
		_, _, err := kf.Open(context.Background(), []byte("hello"))
		if !errors.Is(err, ErrUnsupportedKDF) {
			t.Errorf("n=%d r=%d p=%d: %v, want ErrUnsupportedKDF", p.N, p.R, p.P, err)
		}
	}
}
