package chunkstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Vectors from FORMAT.md §10.

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex in test vector: %v", err)
	}
	return b
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

func testConfig(t testing.TB, fill func(i int) byte) *crypto.Config {
	t.Helper()
	var k [crypto.KeySize]byte
	for i := range k {
		k[i] = fill(i)
	}
	c, err := crypto.NewConfig(k)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keyA is bytes 00..1f, keyB 32 × 0x09 (§10.2).
func keyA(t testing.TB) *crypto.Config { return testConfig(t, func(i int) byte { return byte(i) }) }
func keyB(t testing.TB) *crypto.Config { return testConfig(t, func(int) byte { return 0x09 }) }

func ivFrom(start byte) *[crypto.IVSize]byte {
	var iv [crypto.IVSize]byte
	for i := range iv {
		iv[i] = start + byte(i)
	}
	return &iv
}

const (
	vecUncompressed = "42ab3807be8370a1128dc15c0000000000000000000001010101010101010101020202020202020202020303030303030303030304040404040404040404"
	vecEncrypted    = "7b6785be222d4cf0 ea2983dd a0a1a2a3a4a5a6a7a8a9aaabacadaeaf 333f8d38bf24f248b9add774ee6a5b0a " +
		"2aa323bc18cdcd76c39e1eb0ec158c91834442787c3653aeff1068b41b3725840f92e56096d0bcbeea0d34a61c46b3f41e3e"
	vecCompressed = "31b958426fb6a37fa3c87d7628b52ffd2032cd00007800000102030404040404040404040404100045ca1546b401"
	vecEncrCompr  = "e6591bbf0bbfd80b359cc081b0b1b2b3b4b5b6b7b8b9babbbcbdbebf97c4ae98e9b75b36bf502583c09eacee99b8ab8fca61d8b02fdbab70c6e7e31eae19acd8ea0a7a325895281d1c29abc38533"
	vecZero4MiB   = `
31b958426fb6a37f6068c03a28b52ffd8048000040005400001000000100fbff
39c0020200100002001000020010000200100002001000020010000200100002
0010000200100002001000020010000200100002001000020010000200100044
0000000100fdffcd0b1002001000020010000200100002001000020010000200
1000020010000200100002001000020010000200100002001000020010000200
100003001000`
	digestD      = "c8b59f3093e5268919b92e8e91074d14205c1ae70fac35aec7021603c9e3b63f"
	digestDKeyA  = "3e8441948e44851a37d5f79933bedc210de3932d143269c42836cfe098015d4e"
	digestZero4M = "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"
)

func newCodec(t testing.TB) (*Encoder, *Decoder) {
	t.Helper()
	e, err := NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); d.Close() })
	return e, d
}

func TestMagics(t *testing.T) {
	tests := []struct {
		label string
		want  string
		magic *[8]byte // the codec's constant, nil for magics owned by other packages
	}{
		{"Proxmox Backup uncompressed blob v1.0", "42ab3807be8370a1", &MagicUncompressed},
		{"Proxmox Backup zstd compressed blob v1.0", "31b958426fb6a37f", &MagicCompressed},
		{"Proxmox Backup encrypted blob v1.0", "7b6785be222d4cf0", &MagicEncrypted},
		{"Proxmox Backup zstd compressed encrypted blob v1.0", "e6591bbf0bbfd80b", &MagicEncryptedCompressed},
		{"Proxmox Backup fixed sized chunk index v1.0", "2f7f41ed91fd0fcd", nil},
		{"Proxmox Backup dynamic sized chunk index v1.0", "1c914ea519bab3cd", nil},
		{"Proxmox Backup Catalog file v1.0", "91fd60f9c46758d5", nil},
		{"Proxmox Backup authenticated blob v1.0", "1f87eee291ce0502", &magicAuth},
		{"Proxmox Backup zstd compressed authenticated blob v1.0", "7ea60fbe911fa960", &magicAuthCompressed},
	}
	for _, tt := range tests {
		sum := sha256.Sum256([]byte(tt.label))
		if got := hex.EncodeToString(sum[:8]); got != tt.want {
			t.Errorf("SHA256(%q)[:8] = %s, want %s", tt.label, got, tt.want)
		}
		if tt.magic != nil && !bytes.Equal(tt.magic[:], sum[:8]) {
			t.Errorf("constant for %q = %x, want %x", tt.label, tt.magic[:], sum[:8])
		}
	}
	kinds := []struct {
		k          BlobKind
		magic      [8]byte
		enc, compr bool
		header     int
		name       string
	}{
		{KindUncompressed, MagicUncompressed, false, false, 12, "uncompressed blob"},
		{KindCompressed, MagicCompressed, false, true, 12, "zstd compressed blob"},
		{KindEncrypted, MagicEncrypted, true, false, 44, "encrypted blob"},
		{KindEncryptedCompressed, MagicEncryptedCompressed, true, true, 44, "zstd compressed encrypted blob"},
	}
	for _, kk := range kinds {
		if kk.k.magic() != kk.magic || kk.k.Encrypted() != kk.enc || kk.k.Compressed() != kk.compr ||
			kk.k.HeaderSize() != kk.header || kk.k.String() != kk.name {
			t.Errorf("kind %d: magic %x enc %v compr %v header %d name %q", kk.k, kk.k.magic(),
				kk.k.Encrypted(), kk.k.Compressed(), kk.k.HeaderSize(), kk.k.String())
		}
		blob := make([]byte, kk.header)
		copy(blob, kk.magic[:])
		if got, err := Kind(blob); err != nil || got != kk.k {
			t.Errorf("Kind(%x header) = %v, %v", kk.magic, got, err)
		}
	}
	if BlobKind(0).String() != "unknown blob" {
		t.Errorf("BlobKind(0).String() = %q", BlobKind(0).String())
	}
}

// TestEncodeVectors: the encoder reproduces the §10.4 bytes exactly.
func TestEncodeVectors(t *testing.T) {
	e, d := newCodec(t)
	tests := []struct {
		name     string
		cc       *crypto.Config
		iv       *[crypto.IVSize]byte
		compress bool
		want     string
	}{
		// Only compress=false has exact expected bytes: zstd output is not
		// canonical (§2.6), the compressed vectors are decoder tests.
		{"uncompressed", nil, ivFrom(0), false, vecUncompressed},
		{"encrypted", keyA(t), ivFrom(0xa0), false, vecEncrypted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.encodeIV(nil, dataD(), tt.cc, tt.compress, tt.iv)
			if err != nil {
				t.Fatal(err)
			}
			want := unhex(t, tt.want)
			if !bytes.Equal(got, want) {
				t.Fatalf("encode =\n%x\nwant\n%x", got, want)
			}
			pt, _, err := d.Decode(nil, got, tt.cc, 0)
			if err != nil || !bytes.Equal(pt, dataD()) {
				t.Fatalf("decode = %x, %v", pt, err)
			}
		})
	}
	// The public Encode uses a random IV: same layout, different IV and bytes.
	a, err := e.Encode(dataD(), keyA(t), false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Encode(dataD(), keyA(t), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 94 || bytes.Equal(a[12:28], b[12:28]) || bytes.Equal(a[12:28], make([]byte, 16)) {
		t.Fatalf("Encode IVs not random: %x / %x", a[12:28], b[12:28])
	}
}

// TestDecodeVectors decodes the fixed blobs of §10.4 and §10.5.
func TestDecodeVectors(t *testing.T) {
	_, d := newCodec(t)
	zero4M := make([]byte, 4<<20)
	tests := []struct {
		name      string
		blob      string
		cc        *crypto.Config
		kind      BlobKind
		size      int
		want      []byte
		digest    string
		digestCfg *crypto.Config
		blobLen   int
		storedCRC uint32
	}{
		{"uncompressed", vecUncompressed, nil, KindUncompressed, 62, dataD(), digestD, nil, 62, 0x5cc18d12},
		{"compressed", vecCompressed, nil, KindCompressed, 46, dataD(), digestD, nil, 46, 0},
		{"encrypted", vecEncrypted, keyA(t), KindEncrypted, 94, dataD(), digestDKeyA, keyA(t), 94, 0xdd8329ea},
		{"encrypted-compressed", vecEncrCompr, keyA(t), KindEncryptedCompressed, 78, dataD(), digestDKeyA, keyA(t), 78, 0},
		{"zero-4MiB", vecZero4MiB, nil, KindCompressed, 166, zero4M, digestZero4M, nil, 166, 0x3ac06860},
		// The key is not needed for plain blobs and must not change the result.
		{"uncompressed-with-key", vecUncompressed, keyB(t), KindUncompressed, 62, dataD(), digestD, nil, 62, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blob := unhex(t, tt.blob)
			if len(blob) != tt.blobLen {
				t.Fatalf("vector is %d bytes, want %d", len(blob), tt.blobLen)
			}
			if tt.storedCRC != 0 {
				if got := binary.LittleEndian.Uint32(blob[8:12]); got != tt.storedCRC {
					t.Fatalf("vector CRC %08x, want %08x", got, tt.storedCRC)
				}
			}
			orig := append([]byte(nil), blob...)
			k, err := Kind(blob)
			if err != nil || k != tt.kind {
				t.Fatalf("Kind = %v, %v; want %v", k, err, tt.kind)
			}
			// Encrypted blobs take two paths: ciphertext||tag joined in the
			// blob's spare capacity, or copied to scratch when there is none.
			spare := append(make([]byte, 0, len(blob)+crypto.TagSize), blob...)
			exact := blob[:len(blob):len(blob)]
			// Decode repeatedly with the same decoder (scratch reuse), with and
			// without spare capacity, into nil and into a preallocated dst.
			for i, c := range []struct{ dst, blob []byte }{
				{nil, exact}, {make([]byte, 3, len(tt.want)+8), exact},
				{nil, spare}, {make([]byte, 3, len(tt.want)+8), spare},
			} {
				dst := c.dst
				pt, k, err := d.Decode(dst, c.blob, tt.cc, 0)
				if err != nil {
					t.Fatalf("Decode #%d: %v", i, err)
				}
				if k != tt.kind {
					t.Fatalf("Decode kind = %v, want %v", k, tt.kind)
				}
				if !bytes.Equal(pt, tt.want) {
					t.Fatalf("Decode #%d = %d bytes %.32x…, want %d bytes", i, len(pt), pt, len(tt.want))
				}
				if dst != nil && &pt[0] != &dst[:1][0] {
					t.Fatalf("Decode #%d did not reuse dst with enough capacity", i)
				}
				if got := tt.digestCfg.ChunkDigest(pt).String(); got != tt.digest {
					t.Fatalf("digest = %s, want %s", got, tt.digest)
				}
			}
			if !bytes.Equal(blob, orig) || !bytes.Equal(spare, orig) {
				t.Fatal("Decode modified its input")
			}
			// maxSize: exactly the plaintext size passes, one less is ErrTooLarge.
			if _, _, err := d.Decode(nil, blob, tt.cc, len(tt.want)); err != nil {
				t.Fatalf("Decode maxSize=%d: %v", len(tt.want), err)
			}
			if _, _, err := d.Decode(nil, blob, tt.cc, len(tt.want)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Decode maxSize=%d: err = %v, want ErrTooLarge", len(tt.want)-1, err)
			}
		})
	}
}

// All codec errors, for checking that each failure matches exactly one.
var blobErrors = []error{ErrTruncated, ErrEmpty, ErrUnknownMagic, ErrObsoleteMagic, ErrCRC, ErrNoKey, ErrDecrypt, ErrDecompress, ErrTooLarge}

// withCRC returns blob with its CRC recomputed over the bytes after the header.
func withCRC(blob []byte) []byte {
	b := append([]byte(nil), blob...)
	hs := PlainHeaderSize
	if k, err := Kind(b); err == nil {
		hs = k.HeaderSize()
	}
	binary.LittleEndian.PutUint32(b[8:12], crc32.ChecksumIEEE(b[hs:]))
	return b
}

// rleFrame builds a zstd frame of n zero bytes from raw RLE blocks (128 KiB
// each), with or without the frame content size in the header.
func rleFrame(n int, withFCS bool) []byte {
	f := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if withFCS {
		f = append(f, 0xe0) // FCS 8 bytes, single segment
		f = binary.LittleEndian.AppendUint64(f, uint64(n))
	} else {
		f = append(f, 0x00, 0x38) // no FCS; window descriptor: 2^(10+7) = 128 KiB
	}
	for n > 0 {
		bs := min(n, 128<<10)
		n -= bs
		last := 0
		if n == 0 {
			last = 1
		}
		h := uint32(last) | 1<<1 | uint32(bs)<<3 // RLE block
		f = append(f, byte(h), byte(h>>8), byte(h>>16), 0x00)
	}
	return f
}

func plainBlob(magic [8]byte, payload []byte) []byte {
	return withCRC(append(append(magic[:], 0, 0, 0, 0), payload...))
}

// decodeErrorCase is a blob Decode must refuse with the error want.
type decodeErrorCase struct {
	name    string
	blob    []byte
	cc      *crypto.Config
	maxSize int
	want    error
}

// decodeErrorCases are the damaged, truncated and refused blobs of
// TestDecodeErrors, each with the error it must fail with.
func decodeErrorCases(t *testing.T) []decodeErrorCase {
	unc := unhex(t, vecUncompressed)
	enc := unhex(t, vecEncrypted)
	encCompr := unhex(t, vecEncrCompr)
	compr := unhex(t, vecCompressed)

	mut := func(b []byte, f func(b []byte)) []byte {
		c := append([]byte(nil), b...)
		f(c)
		return c
	}
	corruptFrame := mut(compr, func(b []byte) { b[20] ^= 0xff })
	// Encrypt a corrupt zstd frame with Key A so that only decompression fails.
	e, _ := newCodec(t)
	encCorrupt, err := e.encodeIV(nil, []byte("\x28\xb5\x2f\xfdnot really zstd"), keyA(t), false, ivFrom(1))
	if err != nil {
		t.Fatal(err)
	}
	copy(encCorrupt, MagicEncryptedCompressed[:])

	return []decodeErrorCase{
		{"empty", nil, nil, 0, ErrEmpty},
		{"empty-slice", []byte{}, keyA(t), 0, ErrEmpty},
		{"1-byte", unc[:1], nil, 0, ErrTruncated},
		{"11-bytes", unc[:11], nil, 0, ErrTruncated},
		{"8-bytes-unknown-magic", []byte("abcdefgh"), nil, 0, ErrTruncated},
		{"encrypted-12-bytes", enc[:12], keyA(t), 0, ErrTruncated},
		{"encrypted-43-bytes", enc[:43], keyA(t), 0, ErrTruncated},
		{"encr-compr-43-bytes", encCompr[:43], keyA(t), 0, ErrTruncated},
		{"unknown-magic", mut(unc, func(b []byte) { b[0] ^= 1 }), nil, 0, ErrUnknownMagic},
		{"zero-magic", make([]byte, 64), nil, 0, ErrUnknownMagic},
		{"fidx-magic", plainBlob([8]byte{0x2f, 0x7f, 0x41, 0xed, 0x91, 0xfd, 0x0f, 0xcd}, dataD()), nil, 0, ErrUnknownMagic},
		{"obsolete-auth", plainBlob(magicAuth, make([]byte, 64)), keyA(t), 0, ErrObsoleteMagic},
		{"obsolete-auth-compressed", plainBlob(magicAuthCompressed, make([]byte, 64)), keyA(t), 0, ErrObsoleteMagic},
		{"crc-payload-flip", mut(unc, func(b []byte) { b[30] ^= 0x80 }), nil, 0, ErrCRC},
		{"crc-field-flip", mut(unc, func(b []byte) { b[8] ^= 1 }), nil, 0, ErrCRC},
		{"crc-truncated-payload", unc[:61], nil, 0, ErrCRC},
		{"crc-appended-byte", append(append([]byte(nil), unc...), 0), nil, 0, ErrCRC},
		{"crc-compressed", mut(compr, func(b []byte) { b[20] ^= 1 }), nil, 0, ErrCRC},
		{"crc-encrypted-ciphertext", mut(enc, func(b []byte) { b[50] ^= 1 }), keyA(t), 0, ErrCRC},
		{"crc-checked-before-key", mut(enc, func(b []byte) { b[50] ^= 1 }), nil, 0, ErrCRC},
		{"encrypted-no-key", enc, nil, 0, ErrNoKey},
		{"encr-compr-no-key", encCompr, nil, 0, ErrNoKey},
		{"encrypted-wrong-key", enc, keyB(t), 0, ErrDecrypt},
		{"encr-compr-wrong-key", encCompr, keyB(t), 0, ErrDecrypt},
		// IV and tag are outside the CRC: damage there passes the CRC and fails GCM.
		{"encrypted-iv-flip", mut(enc, func(b []byte) { b[12] ^= 1 }), keyA(t), 0, ErrDecrypt},
		{"encrypted-tag-flip", mut(enc, func(b []byte) { b[43] ^= 1 }), keyA(t), 0, ErrDecrypt},
		{"ciphertext-flip-crc-fixed", withCRC(mut(enc, func(b []byte) { b[44] ^= 1 })), keyA(t), 0, ErrDecrypt},
		{"magic-swap-encrypted-to-encr-compr", mut(enc, func(b []byte) { copy(b, MagicEncryptedCompressed[:]) }), keyA(t), 0, ErrDecompress},
		{"corrupt-zstd", withCRC(corruptFrame), nil, 0, ErrDecompress},
		{"not-zstd", plainBlob(MagicCompressed, dataD()), nil, 0, ErrDecompress},
		{"truncated-zstd", plainBlob(MagicCompressed, compr[12:40]), nil, 0, ErrDecompress},
		{"encrypted-corrupt-zstd", encCorrupt, keyA(t), 0, ErrDecompress},
		{"uncompressed-too-large", unc, nil, 49, ErrTooLarge},
		{"compressed-too-large", compr, nil, 1, ErrTooLarge},
		{"encrypted-too-large", enc, keyA(t), 10, ErrTooLarge},
		{"encr-compr-too-large", encCompr, keyA(t), 49, ErrTooLarge},
		{"zero-chunk-too-large", unhex(t, vecZero4MiB), nil, 4<<20 - 1, ErrTooLarge},
		// Frames whose output exceeds MaxBlobSize: the codec's own limit.
		{"frame-fcs-over-max", plainBlob(MagicCompressed, rleFrame(MaxBlobSize+1, true)), nil, 0, ErrTooLarge},
		{"frame-fcs-over-maxsize", plainBlob(MagicCompressed, rleFrame(8<<20, true)), nil, 4 << 20, ErrTooLarge},
		{"frame-no-fcs-over-maxsize", plainBlob(MagicCompressed, rleFrame(4<<20+1, false)), nil, 4 << 20, ErrTooLarge},
	}
}

func TestDecodeErrors(t *testing.T) {
	_, d := newCodec(t)
	tests := decodeErrorCases(t)
	encCompr := unhex(t, vecEncrCompr)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, _, err := d.Decode(nil, tt.blob, tt.cc, tt.maxSize)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode error = %v, want %v", err, tt.want)
			}
			if pt != nil {
				t.Fatalf("Decode returned %d bytes with an error", len(pt))
			}
			for _, other := range blobErrors {
				if other != tt.want && errors.Is(err, other) {
					t.Fatalf("error %v also matches %v", err, other)
				}
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		})
	}
	// The decoder still works after errors.
	if pt, _, err := d.Decode(nil, encCompr, keyA(t), 0); err != nil || !bytes.Equal(pt, dataD()) {
		t.Fatalf("Decode after errors: %v", err)
	}
	// The RLE frame builder itself is valid.
	if pt, _, err := d.Decode(nil, plainBlob(MagicCompressed, rleFrame(300<<10, false)), nil, 0); err != nil || len(pt) != 300<<10 || !bytes.Equal(pt, make([]byte, 300<<10)) {
		t.Fatalf("rleFrame: %d bytes, %v", len(pt), err)
	}
}

// TestObsoleteMagicNamed: obsolete magics are rejected by name, not as unknown.
func TestObsoleteMagicNamed(t *testing.T) {
	for _, m := range [][8]byte{magicAuth, magicAuthCompressed} {
		_, err := Kind(plainBlob(m, nil))
		if !errors.Is(err, ErrObsoleteMagic) || errors.Is(err, ErrUnknownMagic) || !strings.Contains(err.Error(), "authenticated blob") {
			t.Errorf("Kind(%x) = %v", m, err)
		}
	}
}

// textLike returns n bytes of deterministic, text-like data that zstd
// compresses roughly 2-3×.
func textLike(n int, seed uint64) []byte {
	words := strings.Fields(`the quick brown fox jumps over lazy dog backup chunk index
		archive snapshot datastore proxmox server client restore verify encrypt digest
		namespace group manifest fingerprint garbage collection zstd compressed blob
		0 1 2 3 4 5 6 7 8 9 10 42 100 1024 4096 65536 /var/lib/vz/images/ /etc/pve/ ERROR WARN INFO`)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b bytes.Buffer
	b.Grow(n + 64)
	for b.Len() < n {
		switch r.IntN(16) {
		case 0:
			b.WriteByte('\n')
		case 1, 2:
			// some high-entropy noise (ids, hashes)
			for i := 0; i < 12; i++ {
				b.WriteByte("0123456789abcdef"[r.IntN(16)])
			}
		default:
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte(' ')
	}
	return b.Bytes()[:n]
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint64())
	}
	return b
}

func TestEncodeRoundTrip(t *testing.T) {
	e, d := newCodec(t)
	ka := keyA(t)
	inputs := []struct {
		name       string
		data       []byte
		compresses bool // zstd output strictly smaller
	}{
		{"empty", nil, false},
		{"1-byte", []byte{7}, false},
		{"D", dataD(), true},
		{"text-1MiB", textLike(1<<20, 1), true},
		{"random-64KiB", randomBytes(64<<10, 2), false},
		{"random-1000", randomBytes(1000, 3), false},
		{"zero-4MiB", make([]byte, 4<<20), true},
	}
	for _, in := range inputs {
		for _, cc := range []*crypto.Config{nil, ka} {
			for _, compress := range []bool{false, true} {
				name := in.name
				if cc != nil {
					name += "/encrypted"
				}
				if compress {
					name += "/compress"
				}
				t.Run(name, func(t *testing.T) {
					blob, err := e.Encode(in.data, cc, compress)
					if err != nil {
						t.Fatal(err)
					}
					wantKind := KindUncompressed
					switch {
					case cc != nil && compress && in.compresses:
						wantKind = KindEncryptedCompressed
					case cc != nil:
						wantKind = KindEncrypted
					case compress && in.compresses:
						wantKind = KindCompressed
					}
					k, err := Kind(blob)
					if err != nil || k != wantKind {
						t.Fatalf("kind = %v, %v; want %v", k, err, wantKind)
					}
					payload := len(blob) - wantKind.HeaderSize()
					if wantKind.Compressed() && payload >= len(in.data) {
						t.Fatalf("kept compressed payload of %d bytes for %d bytes of data", payload, len(in.data))
					}
					if !wantKind.Compressed() && payload != len(in.data) {
						t.Fatalf("payload %d bytes, want %d", payload, len(in.data))
					}
					if got := binary.LittleEndian.Uint32(blob[8:12]); got != crc32.ChecksumIEEE(blob[wantKind.HeaderSize():]) {
						t.Fatalf("CRC %08x does not cover the bytes after the header", got)
					}
					if wantKind == KindUncompressed && !bytes.Equal(blob[12:], in.data) {
						t.Fatal("uncompressed payload differs from data")
					}
					if cc != nil && len(in.data) > 16 && bytes.Contains(blob, in.data[:16]) {
						t.Fatal("plaintext visible in encrypted blob")
					}
					pt, k2, err := d.Decode(nil, blob, cc, len(in.data))
					if err != nil {
						t.Fatalf("Decode: %v", err)
					}
					if k2 != wantKind || !bytes.Equal(pt, in.data) {
						t.Fatalf("round trip: kind %v, %d bytes, want %d", k2, len(pt), len(in.data))
					}
				})
			}
		}
	}
	// Encoding 128 MiB + 1 is refused before any work.
	if _, err := e.Encode(make([]byte, MaxBlobSize+1), nil, true); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Encode over MaxBlobSize: %v", err)
	}
}

// TestEncodeStrictlySmaller: the compressed form is kept only when strictly
// smaller than the data (§2.4, §11.5); a frame exactly as long as the data is
// not used. Short data of r random bytes followed by zeros gives frames of
// about its own length (with klauspost zstd: n=18, r=1 → 18 bytes).
func TestEncodeStrictlySmaller(t *testing.T) {
	e, _ := newCodec(t)
	var equal, smaller, larger int
	for n := 1; n <= 40; n++ {
		for r := 0; r <= n; r++ {
			data := make([]byte, n)
			copy(data, randomBytes(r, 5))
			strictlySmallerCase(t, e, data, &equal, &smaller, &larger)
		}
	}
	if equal == 0 || smaller == 0 || larger == 0 {
		t.Fatalf("boundary not exercised: %d equal, %d smaller, %d larger", equal, smaller, larger)
	}
	// Random data never compresses: uncompressed (or encrypted) magic.
	for _, cc := range []*crypto.Config{nil, keyA(t)} {
		blob, err := e.Encode(randomBytes(1<<20, 9), cc, true)
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := Kind(blob); k.Compressed() {
			t.Fatalf("random data stored as %v", k)
		}
	}
}

func strictlySmallerCase(t *testing.T, e *Encoder, data []byte, equal, smaller, larger *int) {
	t.Helper()
	n := len(data)
	frame := len(e.ze.EncodeAll(data, nil))
	blob, err := e.Encode(data, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := Kind(blob)
	if frame < n {
		*smaller++
		if k != KindCompressed || len(blob) != PlainHeaderSize+frame {
			t.Errorf("n=%d frame=%d: %v, %d bytes; want compressed", n, frame, k, len(blob))
		}
		return
	}
	if frame == n {
		*equal++
	} else {
		*larger++
	}
	if k != KindUncompressed || len(blob) != PlainHeaderSize+n {
		t.Errorf("n=%d frame=%d: %v, %d bytes; want uncompressed", n, frame, k, len(blob))
	}
}

// TestDecoderLimitBomb: a small frame without a declared size that expands
// to 128 MiB must not make a limited decoder allocate far beyond its limit.
func TestDecoderLimitBomb(t *testing.T) {
	blob := plainBlob(MagicCompressed, rleFrame(MaxBlobSize, false))
	d, err := NewDecoderLimit(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, _, err = d.Decode(make([]byte, 0, 64<<10), blob, nil, 64<<10)
	if err == nil {
		t.Fatal("the bomb decoded")
	}
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 64<<20 { // was 680 MiB before the limit
		t.Errorf("decoding the bomb allocated %d MiB", alloc>>20)
	}
}
