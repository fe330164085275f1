package crypto

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// Vectors from FORMAT.md §10.

// keyA is bytes 00 01 … 1f (§10.2).
func keyA() [KeySize]byte {
	var k [KeySize]byte
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// keyB is 32 × 0x09 (§10.2).
func keyB() [KeySize]byte {
	var k [KeySize]byte
	for i := range k {
		k[i] = 0x09
	}
	return k
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "\n", "", ":", "").Replace(s))
	if err != nil {
		t.Fatalf("bad hex in test vector %q: %v", s, err)
	}
	return b
}

func mustConfig(t testing.TB, key [KeySize]byte) *Config {
	t.Helper()
	c, err := NewConfig(key)
	if err != nil {
		t.Fatalf("NewConfig: %v", err)
	}
	return c
}

// dataD is the 50-byte test data of §10.4: ten 00, ten 01, …, ten 04.
func dataD() []byte {
	d := make([]byte, 0, 50)
	for v := byte(0); v < 5; v++ {
		for i := 0; i < 10; i++ {
			d = append(d, v)
		}
	}
	return d
}

func TestFingerprintInput(t *testing.T) {
	want := "6ed0ef77471fff4d55c7a8fe4a9db62161407f134c725ddf30992d25ec45ed26"
	if got := hex.EncodeToString(fingerprintInput[:]); got != want {
		t.Fatalf("FINGERPRINT_INPUT = %s, want %s", got, want)
	}
}

func TestConfigVectors(t *testing.T) {
	zero4M := make([]byte, 4<<20)
	tests := []struct {
		name        string
		key         [KeySize]byte
		idKey       string
		fingerprint string
		short       string
		zeroDigest  string // SHA256(zeros(4 MiB) || id_key)
	}{
		{
			name:        "KeyA",
			key:         keyA(),
			idKey:       "7c2c013efd07f3b25717a485263343cd4d292a4b65c200bb3b18ea227abe225c",
			fingerprint: "0e:ab:d4:46:0b:6e:b9:ca:34:50:23:de:e2:b7:78:c7:90:e5:4a:16:83:b9:65:9c:0a:57:ae:19:90:90:15:9b",
			short:       "0e:ab:d4:46:0b:6e:b9:ca",
			zeroDigest:  "348571e12bbbedb529def1f1394316e338a01945d871df9ef792617ceb13d636",
		},
		{
			name:        "KeyB",
			key:         keyB(),
			idKey:       "d8574fc7e9bcffc3127c21c78bebf73504a3be683e4dba652865f23435609353",
			fingerprint: "1a:c8:2c:72:fb:bb:62:06:ec:15:89:77:f8:f9:e8:74:3f:be:4f:78:3f:31:4f:45:c8:2f:a0:87:f9:b5:cd:8a",
			short:       "1a:c8:2c:72:fb:bb:62:06",
			zeroDigest:  "5deba33f00ff0935e34bd1c65545a31d7eb8f5b17bc8c97c09384c9d9ee78409",
		},
		{
			// §10.3: scrypt("test", empty salt) key.
			name:        "ManifestKey",
			key:         [KeySize]byte(unhex(t, "28cdb1a3bef39396c3860e00d448fe7a0efd8244486ab6feb30457681d31597e")),
			fingerprint: "12:b9:b7:74:bb:3d:89:95:2b:97:cb:c2:82:f0:0c:14:2b:83:ba:7f:96:62:6a:a1:5a:44:9a:63:e8:91:fe:25",
			short:       "12:b9:b7:74:bb:3d:89:95",
		},
		{
			// Real key from testdata/keys/official-scrypt.key (README.md there).
			name:        "OfficialScrypt",
			key:         [KeySize]byte(unhex(t, "9e57ec008a01817f3188bed7ebc3f1840fdc9ed7422a3a5891f59939bb038063")),
			idKey:       "4d4a43af22189b5e7d3ba1f24ac809d13c8abf97ec9542a18ea8a8586b9d95b4",
			fingerprint: "be:6c:3e:ae:84:21:9c:ef:a0:89:aa:b2:71:b5:96:7b:91:97:f6:71:6f:1b:ac:b5:ae:e9:cc:d0:d6:2a:b7:97",
			short:       "be:6c:3e:ae:84:21:9c:ef",
			zeroDigest:  "d21efcaa8661cfb986792810577dd7276aaf7476294aaf85d44484e78d051473",
		},
		{
			name:        "OfficialPBKDF2",
			key:         [KeySize]byte(unhex(t, "72d3bb7da48e889b12aee4bed96b6c14ae1a9d1d02839c7d7882cb219227f78b")),
			idKey:       "b0dde58b8b4ed8757e22ff0fc7908c3b77b24f9f3f0b39cc7285762f808544d6",
			fingerprint: "70:44:ba:5f:a7:22:e3:a1:d1:3e:32:d7:3f:58:d6:95:83:44:c3:7d:d6:1c:02:b7:7b:5a:c9:41:8f:9e:c1:ca",
			short:       "70:44:ba:5f:a7:22:e3:a1",
			zeroDigest:  "41d2767ee74e5dd2636bf1f31941bbb6e11edc1d0aa91a8dd2d6b9e517637dda",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.key)
			idk := c.IDKey()
			if tt.idKey != "" {
				if got := hex.EncodeToString(idk[:]); got != tt.idKey {
					t.Errorf("id_key = %s, want %s", got, tt.idKey)
				}
			}
			if !bytes.Equal(c.DigestSuffix(), idk[:]) {
				t.Errorf("DigestSuffix = %x, want id_key %x", c.DigestSuffix(), idk)
			}
			fp := c.Fingerprint()
			if got := fp.String(); got != tt.fingerprint {
				t.Errorf("Fingerprint = %s, want %s", got, tt.fingerprint)
			}
			if len(fp.String()) != 95 {
				t.Errorf("full fingerprint is %d chars, want 95", len(fp.String()))
			}
			if got := fp.Short(); got != tt.short {
				t.Errorf("Short = %s, want %s", got, tt.short)
			}
			// The fingerprint is the keyed digest of FINGERPRINT_INPUT (§5.1).
			if d := c.ChunkDigest(fingerprintInput[:]); Fingerprint(d) != fp {
				t.Errorf("ChunkDigest(FINGERPRINT_INPUT) = %s, want fingerprint %x", d, fp[:])
			}
			if tt.zeroDigest != "" {
				if got := c.ChunkDigest(zero4M).String(); got != tt.zeroDigest {
					t.Errorf("keyed 4 MiB zero digest = %s, want %s", got, tt.zeroDigest)
				}
			}
		})
	}
}

func TestPlainChunkDigest(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{1000, "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53"},
		{64 << 10, "de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31"},
		{128 << 10, "fa43239bcee7b97ca62f007cc68487560a39e19f74f3dde7486db3f98df8e471"},
		{256 << 10, "8a39d2abd3999ab73c34db2476849cddf303ce389b35826850f9a700589b4a90"},
		{512 << 10, "07854d2fef297a06ba81685e660c332de36d5d18d546927d30daad6d7fda1541"},
		{1 << 20, "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58"},
		{2 << 20, "5647f05ec18958947d32874eeb788fa396a05d0bab7c1b71f112ceb7e9b31eee"},
		{4 << 20, "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"},
	}
	var nilCfg *Config
	if nilCfg.DigestSuffix() != nil {
		t.Fatalf("nil Config DigestSuffix = %x, want nil", nilCfg.DigestSuffix())
	}
	for _, tt := range tests {
		if got := nilCfg.ChunkDigest(make([]byte, tt.n)).String(); got != tt.want {
			t.Errorf("SHA256(zeros(%d)) = %s, want %s", tt.n, got, tt.want)
		}
	}
	// §10.4 digests of D, plain and keyed with Key A.
	d := dataD()
	if got := nilCfg.ChunkDigest(d).String(); got != "c8b59f3093e5268919b92e8e91074d14205c1ae70fac35aec7021603c9e3b63f" {
		t.Errorf("SHA256(D) = %s", got)
	}
	if got := mustConfig(t, keyA()).ChunkDigest(d).String(); got != "3e8441948e44851a37d5f79933bedc210de3932d143269c42836cfe098015d4e" {
		t.Errorf("SHA256(D || id_key(A)) = %s", got)
	}
}

func TestAuthTag(t *testing.T) {
	// §10.3: the upstream manifest signature test.
	c := mustConfig(t, [KeySize]byte(unhex(t, "28cdb1a3bef39396c3860e00d448fe7a0efd8244486ab6feb30457681d31597e")))
	msg := `{"backup-id":"elsa","backup-time":1593179765,"backup-type":"host","files":[{"crypt-mode":"encrypt","csum":"0101010101010101010101010101010101010101010101010101010101010101","filename":"test1.img.fidx","size":200},{"crypt-mode":"none","csum":"0202020202020202020202020202020202020202020202020202020202020202","filename":"abc.blob","size":200}]}`
	tag := c.AuthTag([]byte(msg))
	if got, want := hex.EncodeToString(tag[:]), "d7b446fb7db081662081d4b40fedd858a1d6307a5aff4ecff7d5bf4fd35679e9"; got != want {
		t.Fatalf("AuthTag = %s, want %s", got, want)
	}
	// Keyed with id_key, not with the raw key and not a plain hash.
	tag2 := c.AuthTag([]byte(msg + " "))
	if tag2 == tag {
		t.Fatal("AuthTag does not depend on the message")
	}
	if sha256.Sum256([]byte(msg)) == tag {
		t.Fatal("AuthTag is a plain SHA-256")
	}
}

func TestSealOpenVector(t *testing.T) {
	// §10.4 "Encrypted, uncompressed": Key A, IV a0..af, plaintext D.
	c := mustConfig(t, keyA())
	var iv [IVSize]byte
	for i := range iv {
		iv[i] = 0xa0 + byte(i)
	}
	wantCT := unhex(t, "2aa323bc18cdcd76c39e1eb0ec158c91834442787c3653aeff1068b41b3725840f92e56096d0bcbeea0d34a61c46b3f41e3e")
	wantTag := unhex(t, "333f8d38bf24f248b9add774ee6a5b0a")
	d := dataD()

	prefix := []byte("hdr")
	ct, tag := c.Seal(append([]byte(nil), prefix...), &iv, d)
	if !bytes.Equal(ct[:3], prefix) {
		t.Fatalf("Seal did not append to dst: %x", ct)
	}
	if !bytes.Equal(ct[3:], wantCT) {
		t.Fatalf("ciphertext = %x, want %x", ct[3:], wantCT)
	}
	if !bytes.Equal(tag[:], wantTag) {
		t.Fatalf("tag = %x, want %x", tag, wantTag)
	}

	tests := []struct {
		name    string
		key     [KeySize]byte
		iv, tag []byte
		ct      []byte
		scratch []byte
		wantErr error // nil: expect D; ErrAuth; or errAny for other errors
	}{
		{name: "ok", key: keyA(), iv: iv[:], tag: wantTag, ct: wantCT},
		{name: "ok-scratch", key: keyA(), iv: iv[:], tag: wantTag, ct: wantCT, scratch: make([]byte, 0, 100)},
		{name: "ok-small-scratch", key: keyA(), iv: iv[:], tag: wantTag, ct: wantCT, scratch: make([]byte, 0, 10)},
		{name: "wrong-key", key: keyB(), iv: iv[:], tag: wantTag, ct: wantCT, wantErr: ErrAuth},
		{name: "flipped-ct", key: keyA(), iv: iv[:], tag: wantTag, ct: flip(wantCT, 7), wantErr: ErrAuth},
		{name: "flipped-tag", key: keyA(), iv: iv[:], tag: flip(wantTag, 0), wantErr: ErrAuth, ct: wantCT},
		{name: "flipped-iv", key: keyA(), iv: flip(iv[:], 15), tag: wantTag, ct: wantCT, wantErr: ErrAuth},
		{name: "truncated-ct", key: keyA(), iv: iv[:], tag: wantTag, ct: wantCT[:49], wantErr: ErrAuth},
		{name: "12-byte-iv", key: keyA(), iv: iv[:12], tag: wantTag, ct: wantCT, wantErr: errAny},
		{name: "short-tag", key: keyA(), iv: iv[:], tag: wantTag[:12], ct: wantCT, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := mustConfig(t, tt.key)
			ctCopy := append([]byte(nil), tt.ct...)
			out, _, err := cc.Open([]byte("x"), tt.iv, tt.tag, tt.ct, tt.scratch)
			if !bytes.Equal(tt.ct, ctCopy) {
				t.Fatal("Open modified its ciphertext argument")
			}
			switch {
			case tt.wantErr == nil:
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if !bytes.Equal(out, append([]byte("x"), d...)) {
					t.Fatalf("Open = %x, want x||D", out)
				}
			case tt.wantErr == errAny:
				if err == nil || errors.Is(err, ErrAuth) {
					t.Fatalf("Open error = %v, want a length error", err)
				}
			default:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open error = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

func TestOpenJoined(t *testing.T) {
	// §10.4 vector again, in Go's ciphertext||tag layout.
	var iv [IVSize]byte
	for i := range iv {
		iv[i] = 0xa0 + byte(i)
	}
	joined := unhex(t, "2aa323bc18cdcd76c39e1eb0ec158c91834442787c3653aeff1068b41b3725840f92e56096d0bcbeea0d34a61c46b3f41e3e"+
		"333f8d38bf24f248b9add774ee6a5b0a")
	tests := []struct {
		name    string
		key     [KeySize]byte
		iv      []byte
		joined  []byte
		wantErr error
	}{
		{"ok", keyA(), iv[:], joined, nil},
		{"wrong-key", keyB(), iv[:], joined, ErrAuth},
		{"flipped-tag", keyA(), iv[:], flip(joined, len(joined)-1), ErrAuth},
		{"flipped-ct", keyA(), iv[:], flip(joined, 0), ErrAuth},
		{"tag-only", keyA(), iv[:], joined[50:], ErrAuth},
		{"shorter-than-tag", keyA(), iv[:], joined[:15], errAny},
		{"12-byte-iv", keyA(), iv[:12], joined, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := mustConfig(t, tt.key).OpenJoined([]byte("x"), tt.iv, tt.joined)
			switch tt.wantErr {
			case nil:
				if err != nil || !bytes.Equal(out, append([]byte("x"), dataD()...)) {
					t.Fatalf("OpenJoined = %x, %v", out, err)
				}
			case errAny:
				if err == nil || errors.Is(err, ErrAuth) {
					t.Fatalf("OpenJoined error = %v, want a length error", err)
				}
			default:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("OpenJoined error = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

var errAny = errors.New("any error")

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x01
	return c
}

func TestSealOpenRoundTrip(t *testing.T) {
	c := mustConfig(t, keyB())
	var iv [IVSize]byte
	for _, n := range []int{0, 1, 15, 16, 17, 4096, 1 << 20} {
		pt := make([]byte, n)
		for i := range pt {
			pt[i] = byte(i*7 + n)
		}
		iv[0] = byte(n)
		ct, tag := c.Seal(nil, &iv, pt)
		if len(ct) != n {
			t.Fatalf("n=%d: ciphertext length %d", n, len(ct))
		}
		out, scratch, err := c.Open(nil, iv[:], tag[:], ct, nil)
		if err != nil || !bytes.Equal(out, pt) {
			t.Fatalf("n=%d: round trip failed: %v", n, err)
		}
		if cap(scratch) < n+TagSize {
			t.Fatalf("n=%d: returned scratch cap %d < %d", n, cap(scratch), n+TagSize)
		}
	}
}

func TestParseDigest(t *testing.T) {
	const lower = "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"lower", lower, true},
		{"upper", strings.ToUpper(lower), true},
		{"mixed", "BB9f8DF61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8", true},
		{"empty", "", false},
		{"short", lower[:62], false},
		{"odd", lower[:63], false},
		{"long", lower + "00", false},
		{"non-hex", "zz" + lower[2:], false},
		{"non-hex-last", lower[:63] + "g", false},
		{"colons", colonHex(unhex(t, lower)), false},
		{"space", " " + lower[1:], false},
		{"0x-prefix", "0x" + lower[2:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseDigest(tt.in)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ParseDigest(%q) = %s, want error", tt.in, d)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDigest(%q): %v", tt.in, err)
			}
			if d.String() != lower {
				t.Fatalf("ParseDigest(%q).String() = %s, want %s", tt.in, d, lower)
			}
		})
	}
}

func TestParseFingerprint(t *testing.T) {
	const full = "0e:ab:d4:46:0b:6e:b9:ca:34:50:23:de:e2:b7:78:c7:90:e5:4a:16:83:b9:65:9c:0a:57:ae:19:90:90:15:9b"
	plain := strings.ReplaceAll(full, ":", "")
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"full", full, true},
		{"no-colons", plain, true},
		{"upper", strings.ToUpper(full), true},
		{"empty", "", false},
		{"short-form", "0e:ab:d4:46:0b:6e:b9:ca", false},
		{"31-bytes", full[:len(full)-3], false},
		{"33-bytes", full + ":00", false},
		{"non-hex", "0g" + full[2:], false},
		{"trailing-space", full + " ", false},
		{"dashes", strings.ReplaceAll(full, ":", "-"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFingerprint(tt.in)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ParseFingerprint(%q) = %s, want error", tt.in, f)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFingerprint(%q): %v", tt.in, err)
			}
			if f.String() != full {
				t.Fatalf("ParseFingerprint(%q) = %s, want %s", tt.in, f, full)
			}
			if f != mustConfig(t, keyA()).Fingerprint() {
				t.Fatal("parsed fingerprint differs from Key A's")
			}
		})
	}
}

func TestDigestString(t *testing.T) {
	var d Digest
	for i := range d {
		d[i] = byte(0xf0 + i)
	}
	want := "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f"
	if d.String() != want {
		t.Fatalf("Digest.String = %s, want %s", d, want)
	}
	var f Fingerprint = Fingerprint(d)
	if got := f.Short(); got != "f0:f1:f2:f3:f4:f5:f6:f7" {
		t.Fatalf("Short = %s", got)
	}
}
