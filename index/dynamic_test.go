package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

const (
	csum107    = "ecd9beb3b3bef1324fd3d9d5290d3074119ed8c6248bbb49aa38de2e83cff099"
	file107    = "99abe65befaa8173939bff3bff29acd0dd59a2a1391f36dc20d48ef94be18d2f"
	entries107 = "e803000000000000" + "c2e686823489ced2017f6059b8b239318b6364f6dcd835d0a519105a1eadd6e4" +
		"b80b000000000000" + "e102cc048a84ab60402d04294d30bfd8a7d02fbec6dee1288d7025751975286b"
)

// vector107 is the dynamic index example of FORMAT.md §10.7.
func vector107(t testing.TB) (DynamicHeader, []DynamicEntry) {
	var uuid [16]byte
	for i := range uuid {
		uuid[i] = byte(i)
	}
	c1 := (*crypto.Config)(nil).ChunkDigest(bytes.Repeat([]byte("A"), 1000))
	c2 := (*crypto.Config)(nil).ChunkDigest(bytes.Repeat([]byte("B"), 2000))
	return DynamicHeader{UUID: uuid, CTime: 1700000000}, []DynamicEntry{{1000, c1}, {3000, c2}}
}

func TestDynamicVector(t *testing.T) {
	hdr, entries := vector107(t)
	b, err := BuildDynamic(hdr, entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4176 {
		t.Fatalf("file length %d, want 4176", len(b))
	}
	wantHdr := "1c914ea519bab3cd" + "000102030405060708090a0b0c0d0e0f" + "00f1536500000000" + csum107
	if got := hex.EncodeToString(b[:0x40]); got != wantHdr {
		t.Errorf("header\n got %s\nwant %s", got, wantHdr)
	}
	if got := hex.EncodeToString(b[HeaderSize:]); got != entries107 {
		t.Errorf("entries\n got %s\nwant %s", got, entries107)
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != file107 {
		t.Errorf("SHA256(file) = %x, want %s", got, file107)
	}

	x, err := ParseDynamic(b)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(x.Csum[:]) != csum107 || x.Size() != 3000 || len(x.Entries) != 2 {
		t.Errorf("parsed csum %x size %d entries %d", x.Csum, x.Size(), len(x.Entries))
	}
	if x.Entries[0] != entries[0] || x.Entries[1] != entries[1] || x.Header != func() DynamicHeader { h := hdr; h.IndexCsum = x.Csum; return h }() {
		t.Errorf("parsed %+v", x)
	}
	for _, c := range []struct {
		i           int
		off, length uint64
	}{{0, 0, 1000}, {1, 1000, 2000}, {2, 3000, 0}, {-1, 3000, 0}} {
		if off, l := x.ChunkRange(c.i); off != c.off || l != c.length {
			t.Errorf("ChunkRange(%d) = %d,%d want %d,%d", c.i, off, l, c.off, c.length)
		}
	}
	for _, c := range []struct {
		off uint64
		i   int
		ok  bool
	}{{0, 0, true}, {999, 0, true}, {1000, 1, true}, {2999, 1, true}, {3000, 2, false}} {
		if i, ok := x.ChunkAt(c.off); i != c.i || ok != c.ok {
			t.Errorf("ChunkAt(%d) = %d,%v want %d,%v", c.off, i, ok, c.i, c.ok)
		}
	}
	m := &Manifest{BackupType: "ct", BackupID: "101", BackupTime: 1700000000,
		Files: []FileInfo{{Filename: "root.pxar.didx", Size: 3000, Csum: hex32(t, csum107)}}}
	wantErr(t, m.VerifyFile("root.pxar.didx", x.Size(), x.Csum), nil)

	// Streaming reader gives the same.
	r, err := NewDynamicReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		pos, e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if pos != uint64(n) || e != entries[n] {
			t.Errorf("entry %d = %+v", pos, e)
		}
		n++
	}
	if r.Size() != 3000 || hex.EncodeToString(func() []byte { c := r.Csum(); return c[:] }()) != csum107 {
		t.Errorf("stream size %d csum %x", r.Size(), r.Csum())
	}
}

func TestDynamicBadInput(t *testing.T) {
	hdr, entries := vector107(t)
	good, err := BuildDynamic(hdr, entries)
	if err != nil {
		t.Fatal(err)
	}
	setEnd := func(i int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[HeaderSize+40*i:], v); return b }
	}
	for _, c := range []struct {
		name  string
		patch func([]byte) []byte
		want  error
		msg   string
	}{
		{"ok", func(b []byte) []byte { return b }, nil, ""},
		{"bad magic", func(b []byte) []byte { copy(b, MagicFixed[:]); return b }, ErrBadMagic, "that is a fixed index"},
		{"no entries", func(b []byte) []byte { return b[:HeaderSize] }, ErrBadLength, "no entries"},
		{"not multiple of 40", func(b []byte) []byte { return b[:len(b)-1] }, ErrBadLength, "not a multiple of 40"},
		{"shorter than header", func(b []byte) []byte { return b[:10] }, ErrBadLength, "shorter"},
		{"equal ends", setEnd(1, 1000), ErrBadIndex, "entry 1 (file offset 4136) ends at 1000, not after the previous end 1000"},
		{"decreasing ends", setEnd(1, 10), ErrBadIndex, "ends at 10"},
		{"first end zero", setEnd(0, 0), ErrBadIndex, "entry 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.patch(bytes.Clone(good))
			_, err := ParseDynamic(b)
			wantErr(t, err, c.want)
			if c.want != nil && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err, c.msg)
			}
		})
	}
	// Stream length differs from the given file size.
	for _, c := range []struct {
		name string
		b    []byte
	}{{"short stream", good[:4150]}, {"long stream", append(bytes.Clone(good), make([]byte, 40)...)}} {
		r, err := NewDynamicReader(bytes.NewReader(c.b), int64(len(good)))
		if err != nil {
			t.Fatal(err)
		}
		for err == nil {
			_, _, err = r.Next()
		}
		wantErr(t, err, ErrBadLength)
	}
}

func TestDynamicWriterErrors(t *testing.T) {
	hdr, entries := vector107(t)
	_, err := BuildDynamic(hdr, nil)
	wantErr(t, err, ErrBadIndex)
	_, err = BuildDynamic(hdr, []DynamicEntry{entries[1], entries[0]})
	wantErr(t, err, ErrBadIndex)
	_, err = BuildDynamic(hdr, []DynamicEntry{{0, entries[0].Digest}})
	wantErr(t, err, ErrBadIndex)
}
