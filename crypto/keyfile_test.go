package crypto

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// §10.8: raw key = Key A, passphrase "correct horse", salt = 32 × 0x11, IV = 16 × 0x22.
const (
	keyFileScrypt = `{"kdf":{"Scrypt":{"n":65536,"r":8,"p":1,"salt":"ERERERERERERERERERERERERERERERERERERERERERE="}},"created":"2024-01-01T00:00:00+00:00","modified":"2024-01-01T00:00:00+00:00","data":"IiIiIiIiIiIiIiIiIiIiIgKJd6alWyiH4bLoPD3DdBsTWVNkYgoiSsUiji38dcGiJF/t/Qb3mb1SNTUQYEpaOQ==","fingerprint":"0e:ab:d4:46:0b:6e:b9:ca:34:50:23:de:e2:b7:78:c7:90:e5:4a:16:83:b9:65:9c:0a:57:ae:19:90:90:15:9b"}`
	keyFilePBKDF2 = `{"kdf":{"PBKDF2":{"iter":65535,"salt":"ERERERERERERERERERERERERERERERERERERERERERE="}},"created":"2024-01-01T00:00:00+00:00","modified":"2024-01-01T00:00:00+00:00","data":"IiIiIiIiIiIiIiIiIiIiIppumyjyYBsMJAeiO39CYJKqaCdisUzdI6dLnJqzHZEpTIT7qrvPXnhkHXgSfjLiEA==","fingerprint":"0e:ab:d4:46:0b:6e:b9:ca:34:50:23:de:e2:b7:78:c7:90:e5:4a:16:83:b9:65:9c:0a:57:ae:19:90:90:15:9b"}`
	keyFileNone   = `{"kdf":null,"created":"2024-01-01T00:00:00+00:00","modified":"2024-01-01T00:00:00+00:00","data":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","fingerprint":"0e:ab:d4:46:0b:6e:b9:ca:34:50:23:de:e2:b7:78:c7:90:e5:4a:16:83:b9:65:9c:0a:57:ae:19:90:90:15:9b"}`

	fpKeyA     = "0e:ab:d4:46:0b:6e:b9:ca:34:50:23:de:e2:b7:78:c7:90:e5:4a:16:83:b9:65:9c:0a:57:ae:19:90:90:15:9b"
	passVector = "correct horse"
	passReal   = "throwaway-passphrase-for-test"
)

func mustParse(t testing.TB, s string) *KeyFile {
	t.Helper()
	k, err := ParseKeyFile([]byte(s))
	if err != nil {
		t.Fatalf("ParseKeyFile: %v", err)
	}
	return k
}

func TestKeyFileVectors(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		needPass bool
		kek      string // derived key-encryption key, "" for kdf null
	}{
		{"scrypt", keyFileScrypt, true, "12feef539e1c08a9a092daa0970d082250e8f7000cfccec7956fd0c126792a33"},
		{"pbkdf2", keyFilePBKDF2, true, "a9e77d30a48fd26a1d2293558c0b60e41af70b4127629665ac4621489580cd15"},
		{"none", keyFileNone, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustParse(t, tt.json)
			if k.NeedsPassphrase() != tt.needPass {
				t.Fatalf("NeedsPassphrase = %v, want %v", k.NeedsPassphrase(), tt.needPass)
			}
			if tt.kek != "" {
				kek, err := k.DeriveKEK(context.Background(), []byte(passVector))
				if err != nil {
					t.Fatalf("DeriveKEK: %v", err)
				}
				if got := hex.EncodeToString(kek); got != tt.kek {
					t.Fatalf("KEK = %s, want %s", got, tt.kek)
				}
			}
			key, cfg, err := k.Open(context.Background(), []byte(passVector))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if key != keyA() {
				t.Fatalf("key = %x, want Key A", key)
			}
			if cfg.Fingerprint().String() != fpKeyA {
				t.Fatalf("fingerprint = %s", cfg.Fingerprint())
			}
			// Marshal reproduces the PBS bytes exactly (field order, padding, no HTML escaping).
			out, err := k.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(out) != tt.json {
				t.Fatalf("Marshal =\n%s\nwant\n%s", out, tt.json)
			}
			if tt.kek != "" {
				// Re-sealing with the fixed IV reproduces data byte for byte.
				var iv [IVSize]byte
				for i := range iv {
					iv[i] = 0x22
				}
				orig := append([]byte(nil), k.Data...)
				if err := k.seal(keyA(), []byte(passVector), iv); err != nil {
					t.Fatalf("seal: %v", err)
				}
				if !bytes.Equal(k.Data, orig) {
					t.Fatalf("seal data = %x, want %x", []byte(k.Data), orig)
				}
			}
		})
	}
	// kdf null ignores the passphrase entirely.
	if key, _, err := mustParse(t, keyFileNone).Open(context.Background(), nil); err != nil || key != keyA() {
		t.Fatalf("Open(nil) on unprotected key: %x, %v", key, err)
	}
}

// readRealKey loads a key written by the official client (testdata/keys, a
// byte-for-byte copy of shared/testdata/keys).
func readRealKey(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "keys", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

func TestOfficialKeyFiles(t *testing.T) {
	tests := []struct {
		file, kek, key, idKey, fp, zero string
	}{
		{
			file:  "official-scrypt.key",
			kek:   "c9b839dad76d093933cd95d79f09ea2a1d780d504d96ad623bf1db0b7e5cc820",
			key:   "9e57ec008a01817f3188bed7ebc3f1840fdc9ed7422a3a5891f59939bb038063",
			idKey: "4d4a43af22189b5e7d3ba1f24ac809d13c8abf97ec9542a18ea8a8586b9d95b4",
			fp:    "be:6c:3e:ae:84:21:9c:ef:a0:89:aa:b2:71:b5:96:7b:91:97:f6:71:6f:1b:ac:b5:ae:e9:cc:d0:d6:2a:b7:97",
			zero:  "d21efcaa8661cfb986792810577dd7276aaf7476294aaf85d44484e78d051473",
		},
		{
			file:  "official-pbkdf2.key",
			kek:   "3cca07e33de4699cb0bba19a841affb57fd404c960b640538a0a0cd8d6c79ca6",
			key:   "72d3bb7da48e889b12aee4bed96b6c14ae1a9d1d02839c7d7882cb219227f78b",
			idKey: "b0dde58b8b4ed8757e22ff0fc7908c3b77b24f9f3f0b39cc7285762f808544d6",
			fp:    "70:44:ba:5f:a7:22:e3:a1:d1:3e:32:d7:3f:58:d6:95:83:44:c3:7d:d6:1c:02:b7:7b:5a:c9:41:8f:9e:c1:ca",
			zero:  "41d2767ee74e5dd2636bf1f31941bbb6e11edc1d0aa91a8dd2d6b9e517637dda",
		},
	}
	zero4M := make([]byte, 4<<20)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := readRealKey(t, tt.file)
			k, err := ParseKeyFile(raw)
			if err != nil {
				t.Fatalf("ParseKeyFile: %v", err)
			}
			kek, err := k.DeriveKEK(context.Background(), []byte(passReal))
			if err != nil {
				t.Fatalf("DeriveKEK: %v", err)
			}
			if got := hex.EncodeToString(kek); got != tt.kek {
				t.Fatalf("KEK = %s, want %s", got, tt.kek)
			}
			key, cfg, err := k.Open(context.Background(), []byte(passReal))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got := hex.EncodeToString(key[:]); got != tt.key {
				t.Fatalf("key = %s, want %s", got, tt.key)
			}
			idk := cfg.IDKey()
			if got := hex.EncodeToString(idk[:]); got != tt.idKey {
				t.Fatalf("id_key = %s, want %s", got, tt.idKey)
			}
			if got := cfg.Fingerprint().String(); got != tt.fp || got != k.Fingerprint {
				t.Fatalf("fingerprint = %s, want %s (file %s)", got, tt.fp, k.Fingerprint)
			}
			if got := cfg.ChunkDigest(zero4M).String(); got != tt.zero {
				t.Fatalf("keyed zero digest = %s, want %s", got, tt.zero)
			}
			// The official client writes exactly what Marshal writes.
			out, err := k.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if !bytes.Equal(out, raw) {
				t.Fatalf("Marshal =\n%s\nwant\n%s", out, raw)
			}
			// Wrong passphrase must fail GCM authentication (reuses the cheap PBKDF2 file only).
			if k.KDF.PBKDF2 != nil {
				if _, _, err := k.Open(context.Background(), []byte(passReal+"x")); !errors.Is(err, ErrWrongPassphrase) {
					t.Fatalf("wrong passphrase: err = %v, want ErrWrongPassphrase", err)
				}
			}
		})
	}
}

// cheapPBKDF2 returns a valid key file for Key A with 1 PBKDF2 iteration, so
// error tests stay fast.
func cheapPBKDF2(t testing.TB) *KeyFile {
	t.Helper()
	k := &KeyFile{
		KDF:         &KDF{PBKDF2: &PBKDF2Params{Iter: 1, Salt: bytes.Repeat([]byte{0x11}, 32)}},
		Created:     "2024-01-01T00:00:00+00:00",
		Modified:    "2024-01-01T00:00:00+00:00",
		Fingerprint: fpKeyA,
	}
	var iv [IVSize]byte
	if err := k.seal(keyA(), []byte(passVector), iv); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyFileOpenErrors(t *testing.T) {
	otherFP := mustConfig(t, keyB()).Fingerprint().String()
	tests := []struct {
		name    string
		mod     func(k *KeyFile)
		pass    string
		wantErr error
	}{
		{"ok", func(k *KeyFile) {}, passVector, nil},
		{"no-fingerprint", func(k *KeyFile) { k.Fingerprint = "" }, passVector, nil},
		{"fingerprint-no-colons", func(k *KeyFile) { k.Fingerprint = strings.ReplaceAll(fpKeyA, ":", "") }, passVector, nil},
		{"wrong-passphrase", func(k *KeyFile) {}, "correct horse battery", ErrWrongPassphrase},
		{"empty-passphrase", func(k *KeyFile) {}, "", ErrPassphraseNeeded},
		{"wrong-fingerprint", func(k *KeyFile) { k.Fingerprint = otherFP }, passVector, ErrKeyFingerprint},
		{"damaged-ciphertext", func(k *KeyFile) { k.Data[40] ^= 1 }, passVector, ErrWrongPassphrase},
		{"damaged-tag", func(k *KeyFile) { k.Data[16] ^= 1 }, passVector, ErrWrongPassphrase},
		{"other-salt", func(k *KeyFile) { k.KDF.PBKDF2.Salt[0] ^= 1 }, passVector, ErrWrongPassphrase},
		{"zero-iterations", func(k *KeyFile) { k.KDF.PBKDF2.Iter = 0 }, passVector, ErrUnsupportedKDF},
		{"short-data", func(k *KeyFile) { k.Data = k.Data[:40] }, passVector, errAny},
		{"very-short-data", func(k *KeyFile) { k.Data = k.Data[:20] }, passVector, errAny},
		{"no-data", func(k *KeyFile) { k.Data = nil }, passVector, errAny},
		{"unprotected-short-data", func(k *KeyFile) { k.KDF = nil; k.Data = k.Data[:31] }, passVector, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := cheapPBKDF2(t)
			tt.mod(k)
			key, cfg, err := k.Open(context.Background(), []byte(tt.pass))
			switch {
			case tt.wantErr == nil:
				if err != nil || key != keyA() || cfg == nil {
					t.Fatalf("Open = %x, %v", key, err)
				}
			case tt.wantErr == errAny:
				if err == nil || errors.Is(err, ErrWrongPassphrase) || errors.Is(err, ErrKeyFingerprint) {
					t.Fatalf("Open error = %v, want a data length error", err)
				}
			default:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open error = %v, want %v", err, tt.wantErr)
				}
				if cfg != nil {
					t.Fatal("Open returned a Config with an error")
				}
			}
		})
	}
	// Errors stay distinct.
	all := []error{ErrWrongPassphrase, ErrKeyFingerprint, ErrPassphraseNeeded, ErrUnsupportedKDF, ErrPassphraseTooShort}
	for i, a := range all {
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}

// TestKeyFileFingerprintMismatchVector: the §10.8 unprotected file with another key's fingerprint.
func TestKeyFileFingerprintMismatchVector(t *testing.T) {
	bad := strings.Replace(keyFileNone, fpKeyA, mustConfig(t, keyB()).Fingerprint().String(), 1)
	_, _, err := mustParse(t, bad).Open(context.Background(), nil)
	if !errors.Is(err, ErrKeyFingerprint) {
		t.Fatalf("err = %v, want ErrKeyFingerprint", err)
	}
}

func TestParseKeyFile(t *testing.T) {
	const (
		salt   = `"ERERERERERERERERERERERERERERERERERERERERERE="`
		data64 = `"IiIiIiIiIiIiIiIiIiIiIppumyjyYBsMJAeiO39CYJKqaCdisUzdI6dLnJqzHZEpTIT7qrvPXnhkHXgSfjLiEA=="`
		rawKey = `"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="`
	)
	pb := `{"PBKDF2":{"iter":65535,"salt":` + salt + `}}`
	obj := func(kdf, data string, extra string) string {
		return `{"kdf":` + kdf + `,"created":"2024-01-01T00:00:00+00:00","modified":"2024-01-01T00:00:00+00:00","data":` + data + extra + `}`
	}
	tests := []struct {
		name    string
		json    string
		wantErr error // nil ok, errAny: some error
		check   func(t *testing.T, k *KeyFile)
	}{
		{name: "pbkdf2", json: obj(pb, data64, ""), check: func(t *testing.T, k *KeyFile) {
			if k.KDF.PBKDF2 == nil || k.KDF.PBKDF2.Iter != 65535 || !bytes.Equal(k.KDF.PBKDF2.Salt, bytes.Repeat([]byte{0x11}, 32)) || k.KDF.Scrypt != nil {
				t.Fatalf("KDF = %+v", k.KDF.PBKDF2)
			}
		}},
		{name: "scrypt-params", json: obj(`{"Scrypt":{"n":16384,"r":4,"p":2,"salt":`+salt+`}}`, data64, ""), check: func(t *testing.T, k *KeyFile) {
			s := k.KDF.Scrypt
			if s == nil || s.N != 16384 || s.R != 4 || s.P != 2 || len(s.Salt) != 32 || k.KDF.PBKDF2 != nil {
				t.Fatalf("Scrypt = %+v", s)
			}
		}},
		{name: "none-no-padding", json: obj("null", strings.TrimRight(rawKey, `="`)+`"`, ""), check: func(t *testing.T, k *KeyFile) {
			if ka := keyA(); !bytes.Equal(k.Data, ka[:]) {
				t.Fatalf("data = %x", []byte(k.Data))
			}
		}},
		{name: "pbkdf2-no-padding", json: obj(`{"PBKDF2":{"iter":65535,"salt":"ERERERERERERERERERERERERERERERERERERERERERE"}}`, strings.TrimRight(data64, `="`)+`"`, "")},
		{name: "kdf-missing", json: `{"created":"2024-01-01T00:00:00+00:00","data":` + rawKey + `}`, check: func(t *testing.T, k *KeyFile) {
			if k.NeedsPassphrase() {
				t.Fatal("missing kdf treated as protected")
			}
		}},
		{name: "unknown-fields", json: obj(pb, data64, `,"future":{"a":[1,2]},"hint":"the usual","x":null`), check: func(t *testing.T, k *KeyFile) {
			if k.Hint != "the usual" {
				t.Fatalf("hint = %q", k.Hint)
			}
		}},
		{name: "unknown-param-field", json: obj(`{"PBKDF2":{"iter":65535,"salt":`+salt+`,"alg":"sha256"}}`, data64, "")},
		{name: "field-order", json: `{"data":` + rawKey + `,"fingerprint":"` + fpKeyA + `","kdf":null}`},
		{name: "unknown-kdf-tag", json: obj(`{"Argon2id":{"m":65536,"salt":`+salt+`}}`, data64, ""), wantErr: ErrUnsupportedKDF},
		{name: "lowercase-tag", json: obj(`{"scrypt":{"n":65536,"r":8,"p":1,"salt":`+salt+`}}`, data64, ""), wantErr: ErrUnsupportedKDF},
		{name: "uppercase-pbkdf2-tag", json: obj(`{"pbkdf2":{"iter":65535,"salt":`+salt+`}}`, data64, ""), wantErr: ErrUnsupportedKDF},
		{name: "empty-kdf-object", json: obj(`{}`, data64, ""), wantErr: ErrUnsupportedKDF},
		{name: "two-kdf-tags", json: obj(`{"PBKDF2":{"iter":1,"salt":`+salt+`},"Scrypt":{"n":2,"r":1,"p":1,"salt":`+salt+`}}`, data64, ""), wantErr: ErrUnsupportedKDF},
		{name: "kdf-string", json: obj(`"scrypt"`, data64, ""), wantErr: errAny},
		{name: "bad-base64", json: obj(pb, `"IiIi!IiI"`, ""), wantErr: errAny},
		{name: "bad-base64-salt", json: obj(`{"PBKDF2":{"iter":1,"salt":"***"}}`, data64, ""), wantErr: errAny},
		{name: "base64url", json: obj("null", `"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh-_"`, ""), wantErr: errAny},
		{name: "data-not-string", json: obj("null", `[0,1,2]`, ""), wantErr: errAny},
		{name: "protected-data-too-short", json: obj(pb, rawKey, ""), wantErr: errAny},
		{name: "protected-data-too-long", json: obj(pb, `"`+strings.Repeat("A", 96)+`"`, ""), wantErr: errAny},
		{name: "unprotected-data-64-bytes", json: obj("null", data64, ""), wantErr: errAny},
		{name: "unprotected-data-empty", json: obj("null", `""`, ""), wantErr: errAny},
		{name: "not-json", json: `kdf: null`, wantErr: errAny},
		{name: "truncated-json", json: keyFileNone[:50], wantErr: errAny},
		{name: "json-array", json: `[]`, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKeyFile([]byte(tt.json))
			switch {
			case tt.wantErr == nil:
				if err != nil {
					t.Fatalf("ParseKeyFile: %v", err)
				}
				if tt.check != nil {
					tt.check(t, k)
				}
			case tt.wantErr == errAny:
				if err == nil {
					t.Fatalf("ParseKeyFile succeeded: %+v", k)
				}
			default:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseKeyFile error = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

func TestDeriveKEKLimits(t *testing.T) {
	salt := b64(bytes.Repeat([]byte{0x11}, 32))
	tests := []struct {
		name    string
		kdf     *KDF
		wantErr error
	}{
		{"no-kdf", nil, errAny},
		{"scrypt-n-not-power-of-two", &KDF{Scrypt: &ScryptParams{N: 1000, R: 8, P: 1, Salt: salt}}, errAny},
		{"scrypt-n-zero", &KDF{Scrypt: &ScryptParams{N: 0, R: 8, P: 1, Salt: salt}}, errAny},
		// Would need 128 TiB: must be refused up front, not attempted.
		{"scrypt-huge-memory", &KDF{Scrypt: &ScryptParams{N: 1 << 30, R: 1 << 10, P: 1, Salt: salt}}, ErrUnsupportedKDF},
		{"scrypt-over-openssl-maxmem", &KDF{Scrypt: &ScryptParams{N: 1 << 20, R: 16, P: 1, Salt: salt}}, ErrUnsupportedKDF},
		{"scrypt-n-overflow", &KDF{Scrypt: &ScryptParams{N: 1 << 62, R: 8, P: 1, Salt: salt}}, ErrUnsupportedKDF},
		{"pbkdf2-negative", &KDF{PBKDF2: &PBKDF2Params{Iter: -1, Salt: salt}}, ErrUnsupportedKDF},
		// Would take an hour: refused up front.
		{"pbkdf2-2^31", &KDF{PBKDF2: &PBKDF2Params{Iter: 1 << 31, Salt: salt}}, ErrUnsupportedKDF},
		{"pbkdf2-over-bound", &KDF{PBKDF2: &PBKDF2Params{Iter: PBKDF2MaxIter + 1, Salt: salt}}, ErrUnsupportedKDF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &KeyFile{KDF: tt.kdf}
			_, err := k.DeriveKEK(context.Background(), []byte(passVector))
			if tt.wantErr == errAny {
				if err == nil {
					t.Fatal("DeriveKEK succeeded")
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("DeriveKEK error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// Small valid scrypt parameters derive the RFC 7914 §12 vector.
	k := &KeyFile{KDF: &KDF{Scrypt: &ScryptParams{N: 16, R: 1, P: 1, Salt: nil}}}
	kek, err := k.DeriveKEK(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(kek); got != "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442" {
		t.Fatalf("scrypt(\"\", \"\", 16, 1, 1) = %s", got)
	}
}

var rfc3339Local = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$`)

func TestRFC3339Local(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), "2024-01-01T00:00:00+00:00"},
		{time.Date(2024, 1, 1, 1, 0, 0, 999999999, time.FixedZone("CET", 3600)), "2024-01-01T01:00:00+01:00"},
		{time.Date(2020, 6, 26, 9, 56, 5, 0, time.FixedZone("", -(4*3600+30*60))), "2020-06-26T09:56:05-04:30"},
	}
	for _, tt := range tests {
		if got := RFC3339Local(tt.t); got != tt.want {
			t.Errorf("RFC3339Local(%v) = %s, want %s", tt.t, got, tt.want)
		}
	}
}

func TestNewKeyFileRoundTrip(t *testing.T) {
	key := keyB()
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("", 2*3600))
	const ts = "2025-03-04T05:06:07+02:00"
	wantFP := mustConfig(t, key).Fingerprint().String()
	fieldOrder := regexp.MustCompile(`^\{"kdf":(null|\{"(Scrypt|PBKDF2)":\{[^}]*\}\}),"created":"` + regexp.QuoteMeta(ts) + `","modified":"` + regexp.QuoteMeta(ts) + `","data":"[A-Za-z0-9+/]+={0,2}","fingerprint":"` + wantFP + `"\}$`)
	tests := []struct {
		kdf        string
		paramsJSON string // expected kdf JSON prefix
		dataLen    int
	}{
		{KDFNone, `{"kdf":null,`, 32},
		{KDFPBKDF2, `{"kdf":{"PBKDF2":{"iter":65535,"salt":"`, 64},
		{KDFScrypt, `{"kdf":{"Scrypt":{"n":65536,"r":8,"p":1,"salt":"`, 64},
	}
	pass := []byte("hunter22")
	for _, tt := range tests {
		t.Run(tt.kdf, func(t *testing.T) {
			k, err := NewKeyFile(key, tt.kdf, pass, now)
			if err != nil {
				t.Fatalf("NewKeyFile: %v", err)
			}
			if len(k.Data) != tt.dataLen {
				t.Fatalf("data is %d bytes, want %d", len(k.Data), tt.dataLen)
			}
			if k.Created != ts || k.Modified != ts {
				t.Fatalf("created/modified = %s/%s", k.Created, k.Modified)
			}
			out, err := k.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, []byte(tt.paramsJSON)) || !fieldOrder.Match(out) {
				t.Fatalf("Marshal = %s", out)
			}
			if bytes.Contains(out, []byte("\n")) || bytes.Contains(out, []byte(`"hint"`)) {
				t.Fatalf("Marshal not compact or has empty hint: %q", out)
			}
			if !rfc3339Local.MatchString(k.Created) {
				t.Fatalf("created %q", k.Created)
			}
			if tt.kdf != KDFNone {
				var salt []byte
				if k.KDF.Scrypt != nil {
					salt = k.KDF.Scrypt.Salt
				} else {
					salt = k.KDF.PBKDF2.Salt
				}
				if len(salt) != 32 || bytes.Equal(salt, make([]byte, 32)) {
					t.Fatalf("salt = %x, want 32 random bytes", salt)
				}
				if bytes.Equal(k.Data[:IVSize], make([]byte, IVSize)) {
					t.Fatal("IV is all zero")
				}
			}
			k2, err := ParseKeyFile(out)
			if err != nil {
				t.Fatalf("ParseKeyFile(Marshal): %v", err)
			}
			got, cfg, err := k2.Open(context.Background(), pass)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got != key || cfg.Fingerprint().String() != wantFP {
				t.Fatalf("round trip key = %x", got)
			}
			if tt.kdf == KDFPBKDF2 {
				if _, _, err := k2.Open(context.Background(), []byte("hunter23")); !errors.Is(err, ErrWrongPassphrase) {
					t.Fatalf("wrong passphrase: %v", err)
				}
			}
			if tt.kdf != KDFNone {
				if _, _, err := k2.Open(context.Background(), nil); !errors.Is(err, ErrPassphraseNeeded) {
					t.Fatalf("empty passphrase: %v", err)
				}
			}
		})
	}
}

func TestNewKeyFileErrors(t *testing.T) {
	now := time.Unix(0, 0)
	tests := []struct {
		kdf     string
		pass    string
		wantErr error
	}{
		{KDFScrypt, "", ErrPassphraseTooShort},
		{KDFScrypt, "four", ErrPassphraseTooShort},
		{KDFPBKDF2, "1234", ErrPassphraseTooShort},
		{"Scrypt", "long enough", ErrUnsupportedKDF},
		{"argon2", "long enough", ErrUnsupportedKDF},
		{"", "long enough", ErrUnsupportedKDF},
	}
	for _, tt := range tests {
		if _, err := NewKeyFile(keyA(), tt.kdf, []byte(tt.pass), now); !errors.Is(err, tt.wantErr) {
			t.Errorf("NewKeyFile(%q, %q) error = %v, want %v", tt.kdf, tt.pass, err, tt.wantErr)
		}
	}
	// Exactly MinPassphraseLen bytes is accepted; kdf none ignores the passphrase.
	if _, err := NewKeyFile(keyA(), KDFPBKDF2, []byte("12345"), now); err != nil {
		t.Errorf("5-byte passphrase refused: %v", err)
	}
	if _, err := NewKeyFile(keyA(), KDFNone, nil, now); err != nil {
		t.Errorf("kdf none with empty passphrase: %v", err)
	}
}

func TestMarshalHint(t *testing.T) {
	k := mustParse(t, keyFileNone)
	k.Hint = "<pets & year>"
	out, err := k.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(keyFileNone, "}") + `,"hint":"<pets & year>"}`
	if string(out) != want {
		t.Fatalf("Marshal = %s\nwant %s", out, want)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a == [KeySize]byte{} {
		t.Fatalf("GenerateKey not random: %x %x", a, b)
	}
}
