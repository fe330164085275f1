package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pbsdirect/pbsdirect/crypto"
)

const (
	zero4MiB  = "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"
	zero1000B = "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53"
)

func TestMagics(t *testing.T) {
	for _, c := range []struct {
		label string
		got   [8]byte
	}{
		{"Proxmox Backup fixed sized chunk index v1.0", MagicFixed},
		{"Proxmox Backup dynamic sized chunk index v1.0", MagicDynamic},
	} {
		sum := sha256.Sum256([]byte(c.label))
		if !bytes.Equal(sum[:8], c.got[:]) {
			t.Errorf("%s: magic %x, want %x", c.label, c.got, sum[:8])
		}
	}
}

// TestZeroDigests checks the §10.2 zero-chunk digests used by the fixed vector.
func TestZeroDigests(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{64 << 10, "de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31"},
		{1 << 20, "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58"},
		{4 << 20, zero4MiB},
		{1000, zero1000B},
	} {
		if got := (*crypto.Config)(nil).ChunkDigest(make([]byte, c.n)); got.String() != c.want {
			t.Errorf("zero digest of %d bytes = %s, want %s", c.n, got, c.want)
		}
	}
}

// vector106 is the fixed index example of FORMAT.md §10.6.
func vector106(t testing.TB) (FixedHeader, []crypto.Digest) {
	var uuid [16]byte
	for i := range uuid {
		uuid[i] = byte(i)
	}
	hdr := FixedHeader{UUID: uuid, CTime: 1700000000, Size: 8389608, ChunkSize: 4194304}
	z := (*crypto.Config)(nil).ChunkDigest(make([]byte, 4<<20))
	return hdr, []crypto.Digest{z, z, (*crypto.Config)(nil).ChunkDigest(make([]byte, 1000))}
}

const (
	csum106   = "fc3db1e6b5bfc1bdfea0f47ff0a465b43546015863fe9a3a652f6e1ca94121bd"
	header106 = "2f7f41ed91fd0fcd" + "000102030405060708090a0b0c0d0e0f" + "00f1536500000000" +
		csum106 + "e803800000000000" + "0000400000000000"
	file106 = "949f5895e0c96a7e7a702887c2504a68f93c9673e918630be3a9c60d99ac09ec"
)

func TestFixedVector(t *testing.T) {
	hdr, digests := vector106(t)
	b, err := BuildFixed(hdr, digests)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4192 {
		t.Fatalf("file length %d, want 4192", len(b))
	}
	if got := hex.EncodeToString(b[:0x50]); got != header106 {
		t.Errorf("header 0x00..0x4f\n got %s\nwant %s", got, header106)
	}
	if !bytes.Equal(b[0x50:HeaderSize], make([]byte, HeaderSize-0x50)) {
		t.Error("reserved header bytes not zero")
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != file106 {
		t.Errorf("SHA256(file) = %x, want %s", got, file106)
	}

	// Read it back.
	r, err := NewFixedReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if h.Size != 8389608 || h.ChunkSize != 4194304 || h.CTime != 1700000000 || h.UUID != hdr.UUID || h.ChunkCount() != 3 {
		t.Errorf("header %+v", h)
	}
	for i := uint64(0); ; i++ {
		pos, d, err := r.Next()
		if err == io.EOF {
			if i != 3 {
				t.Fatalf("EOF after %d digests", i)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if pos != i || d != digests[i] {
			t.Errorf("digest %d (pos %d) = %s, want %s", i, pos, d, digests[i])
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after EOF: %v", err)
	}
	if got := r.Csum(); hex.EncodeToString(got[:]) != csum106 {
		t.Errorf("csum %x, want %s", got, csum106)
	}
	wantRanges := [][2]uint64{{0, 4194304}, {4194304, 4194304}, {8388608, 1000}, {8389608, 0}}
	for i, w := range wantRanges {
		if off, n := h.ChunkRange(uint64(i)); off != w[0] || n != w[1] {
			t.Errorf("ChunkRange(%d) = %d,%d want %d,%d", i, off, n, w[0], w[1])
		}
	}

	// The manifest entry of §10.6 verifies against the recomputed values.
	m := &Manifest{BackupType: "vm", BackupID: "100", BackupTime: 1700000000,
		Files: []FileInfo{{Filename: "drive-scsi0.img.fidx", CryptMode: CryptNone, Size: 8389608, Csum: hex32(t, csum106)}}}
	wantErr(t, m.VerifyFile("drive-scsi0.img.fidx", h.Size, r.Csum()), nil)
}

// TestFixedWriterSeeker streams to a real file (seekable) at a non-zero
// offset and to a non-seekable writer; both give the vector bytes.
func TestFixedWriterSeeker(t *testing.T) {
	hdr, digests := vector106(t)
	want, err := BuildFixed(hdr, digests)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "x.tmp_fidx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("prefix"))
	w, err := NewFixedWriter(f, hdr)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range digests {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, w.Add(digests[0]), ErrBadIndex) // one too many
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("second Close succeeded")
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != int64(6+len(want)) {
		t.Errorf("writer left file at %d, want %d", pos, 6+len(want))
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got[6:], want) {
		t.Error("seekable output differs from BuildFixed")
	}
	if w.Header().IndexCsum != hex32(t, csum106) || w.Csum() != hex32(t, csum106) {
		t.Error("writer csum wrong")
	}

	var sink struct{ io.Writer } // hides any Seek method
	var buf bytes.Buffer
	sink.Writer = &buf
	w2, _ := NewFixedWriter(sink, hdr)
	for _, d := range digests {
		w2.Add(d)
	}
	if err := w2.Close(); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("non-seekable output differs (err %v)", err)
	}
}

func TestFixedWriterErrors(t *testing.T) {
	hdr, digests := vector106(t)
	for _, c := range []struct {
		name string
		hdr  FixedHeader
		n    int
		want error
	}{
		{"chunk size 0", FixedHeader{Size: 10}, 0, ErrBadChunkSize},
		{"chunk size 3", FixedHeader{Size: 10, ChunkSize: 3}, 0, ErrBadChunkSize},
		{"size 0", FixedHeader{ChunkSize: 65536}, 0, ErrBadIndex},
		{"chunk size 1", FixedHeader{Size: 10, ChunkSize: 1}, 0, ErrBadChunkSize},
		{"chunk size 8 MiB", FixedHeader{Size: 10, ChunkSize: 8 << 20}, 0, ErrBadChunkSize},
		{"too few digests", hdr, 2, ErrBadIndex},
		{"too many digests", hdr, 4, ErrBadIndex},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds := make([]crypto.Digest, c.n)
			copy(ds, digests)
			_, err := BuildFixed(c.hdr, ds)
			wantErr(t, err, c.want)
		})
	}
}

// fixedFile returns a valid vector file with the header fields patched.
func fixedFile(t *testing.T, patch func(b []byte) []byte) []byte {
	hdr, digests := vector106(t)
	b, err := BuildFixed(hdr, digests)
	if err != nil {
		t.Fatal(err)
	}
	return patch(b)
}

func TestFixedReaderBadInput(t *testing.T) {
	put := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	}
	for _, c := range []struct {
		name     string
		patch    func([]byte) []byte
		fileSize int64 // -1: len(b)
		want     error
		msg      string // substring of the message
	}{
		{"ok", func(b []byte) []byte { return b }, -1, nil, ""},
		{"bad magic", func(b []byte) []byte { b[0] ^= 0xff; return b }, -1, ErrBadMagic, "not a PBS index"},
		{"dynamic magic", func(b []byte) []byte { copy(b, MagicDynamic[:]); return b }, -1, ErrBadMagic, "dynamic index"},
		{"chunk size 0", put(0x48, 0), -1, ErrBadChunkSize, "chunk size 0"},
		{"chunk size not power of two", put(0x48, 3<<20), -1, ErrBadChunkSize, "3145728"},
		{"size 0", put(0x40, 0), -1, ErrBadIndex, "size 0"},
		{"size needs more chunks", put(0x40, 3*4194304+1), -1, ErrBadLength, "requires 4224"},
		{"size needs fewer chunks", put(0x40, 4194304), -1, ErrBadLength, "file is 4192 bytes"},
		{"huge size, smallest chunks", func(b []byte) []byte { put(0x40, ^uint64(0))(b); return put(0x48, MinChunkSize)(b) }, -1, ErrBadLength, "requires 9007199254745088"},
		{"chunk size 1", put(0x48, 1), -1, ErrBadChunkSize, "chunk size 1 is outside"},
		{"chunk size 32 KiB", put(0x48, 32<<10), -1, ErrBadChunkSize, "65536 to 4194304"},
		{"chunk size 8 MiB", put(0x48, 8<<20), -1, ErrBadChunkSize, "8388608"},
		{"file size given too small", func(b []byte) []byte { return b }, 4160, ErrBadLength, "file is 4160 bytes"},
		{"file shorter than header", func(b []byte) []byte { return b[:100] }, -1, ErrBadLength, "header"},
		{"stream shorter than given size", func(b []byte) []byte { return b[:4100] }, 4192, ErrBadLength, "stream ended at byte 4100"},
		{"stream ends inside header", func(b []byte) []byte { return b[:4000] }, 4192, ErrBadLength, "inside the 4096-byte header"},
		{"stream longer than given size", func(b []byte) []byte { return append(b, 0) }, 4192, ErrBadLength, "continues past byte 4192"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := fixedFile(t, c.patch)
			size := c.fileSize
			if size < 0 {
				size = int64(len(b))
			}
			err := readAllFixed(b, size)
			wantErr(t, err, c.want)
			if c.want != nil && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err, c.msg)
			}
			if c.want != nil && strings.Contains(err.Error(), hex.EncodeToString(b[:8])) && c.name != "ok" {
				if b[0] != MagicFixed[0] {
					t.Errorf("message %q echoes the file's first bytes", err)
				}
			}
		})
	}
}

func readAllFixed(b []byte, size int64) error {
	r, err := NewFixedReader(bytes.NewReader(b), size)
	if err != nil {
		return err
	}
	for {
		if _, _, err := r.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func TestFixedReaderIOError(t *testing.T) {
	b := fixedFile(t, func(b []byte) []byte { return b })
	boom := errors.New("boom")
	r, err := NewFixedReader(io.MultiReader(bytes.NewReader(b[:4120]), iotest.ErrReader(boom)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	if _, _, err := r.Next(); !errors.Is(err, boom) || errors.Is(err, ErrBadLength) {
		t.Fatalf("err %v, want the reader's error", err)
	}
	if _, _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("error not sticky: %v", err)
	}
}

// TestFixedBatchLarge writes and reads an index with many chunks through
// NextBatch and Next, with a one-byte-at-a-time reader.
func TestFixedBatchLarge(t *testing.T) {
	const n = 10000
	hdr := FixedHeader{Size: n*65536 - 7, ChunkSize: 65536, CTime: 5}
	ds := make([]crypto.Digest, n)
	for i := range ds {
		binary.LittleEndian.PutUint64(ds[i][:], uint64(i)*0x9e3779b97f4a7c15)
	}
	b, err := BuildFixed(hdr, ds)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, d := range ds {
		h.Write(d[:])
	}
	r, err := NewFixedReader(iotest.HalfReader(bytes.NewReader(b)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]crypto.Digest, 333)
	var got []crypto.Digest
	for {
		pos, k, err := r.NextBatch(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if pos != uint64(len(got)) {
			t.Fatalf("pos %d, want %d", pos, len(got))
		}
		got = append(got, buf[:k]...)
	}
	if len(got) != n || r.Count() != n {
		t.Fatalf("read %d digests, want %d", len(got), n)
	}
	for i := range got {
		if got[i] != ds[i] {
			t.Fatalf("digest %d differs", i)
		}
	}
	if r.Csum() != [32]byte(h.Sum(nil)) {
		t.Error("csum differs")
	}
	if off, l := r.Header().ChunkRange(n - 1); off != (n-1)*65536 || l != 65536-7 {
		t.Errorf("last range %d,%d", off, l)
	}
}

func TestNewUUID(t *testing.T) {
	a, b := NewUUID(), NewUUID()
	if a == b || a[6]>>4 != 4 || a[8]>>6 != 2 {
		t.Errorf("uuids %x %x", a, b)
	}
}

// BenchmarkFixedReaderNext streams the index of a 4 TiB image at 4 MiB
// chunks: 1 Mi digests, 32 MiB.
func BenchmarkFixedReaderNext(b *testing.B) {
	const n = 1 << 20
	ds := make([]crypto.Digest, n)
	for i := range ds {
		binary.LittleEndian.PutUint64(ds[i][:], uint64(i))
	}
	file, err := BuildFixed(FixedHeader{Size: n << 22, ChunkSize: 1 << 22}, ds)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		r, err := NewFixedReader(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
