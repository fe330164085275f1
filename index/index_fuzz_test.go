package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// fuzzIndexSeeds returns valid fixed and dynamic index files (§10.6, §10.7)
// and a few hostile headers.
func fuzzIndexSeeds(f *testing.F) [][]byte {
	hdr, digests := vector106(f)
	fx, err := BuildFixed(hdr, digests)
	if err != nil {
		f.Fatal(err)
	}
	dh, entries := vector107(f)
	dx, err := BuildDynamic(dh, entries)
	if err != nil {
		f.Fatal(err)
	}
	huge := append([]byte(nil), fx[:HeaderSize+32]...)
	binary.LittleEndian.PutUint64(huge[0x40:], 1<<63)
	binary.LittleEndian.PutUint64(huge[0x48:], 1<<63)
	over := append([]byte(nil), fx[:HeaderSize]...)
	binary.LittleEndian.PutUint64(over[0x40:], ^uint64(0))
	binary.LittleEndian.PutUint64(over[0x48:], 1)
	return [][]byte{fx, dx, huge, over, fx[:HeaderSize], dx[:HeaderSize+40]}
}

// shortReader returns at most 7 bytes per Read, to exercise buffering.
type shortReader struct{ r io.Reader }

func (s shortReader) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return s.r.Read(p)
}

// FuzzFixedReader: any bytes with any declared file length never panic; a
// fully read index has exactly ChunkCount digests, matches the declared
// length, and its csum is SHA256 of the digest bytes.
func FuzzFixedReader(f *testing.F) {
	for _, s := range fuzzIndexSeeds(f) {
		f.Add(s, int64(len(s)), false)
		f.Add(s, int64(len(s))+1, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, size int64, short bool) {
		var r io.Reader = bytes.NewReader(b)
		if short {
			r = shortReader{r}
		}
		fr, err := NewFixedReader(r, size)
		if err != nil {
			return
		}
		h := fr.Header()
		if h.ChunkSize < MinChunkSize || h.ChunkSize > MaxChunkSize || h.ChunkSize&(h.ChunkSize-1) != 0 || h.Size == 0 {
			t.Fatalf("invalid header accepted: %+v", h)
		}
		if h.FileSize() != uint64(size) {
			t.Fatalf("header needs %d bytes, declared %d", h.FileSize(), size)
		}
		var sum = sha256.New()
		var n uint64
		for {
			pos, d, err := fr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, ErrBadLength) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if pos != n {
				t.Fatalf("pos %d, want %d", pos, n)
			}
			off, l := h.ChunkRange(pos)
			if l == 0 || l > h.ChunkSize || off+l > h.Size || off+l < off {
				t.Fatalf("chunk %d range [%d,+%d) outside size %d", pos, off, l, h.Size)
			}
			sum.Write(d[:])
			n++
		}
		if n != h.ChunkCount() || uint64(len(b)) != uint64(size) {
			t.Fatalf("read %d digests of %d from %d bytes (declared %d)", n, h.ChunkCount(), len(b), size)
		}
		if got := fr.Csum(); !bytes.Equal(got[:], sum.Sum(nil)) {
			t.Fatalf("csum mismatch")
		}
	})
}

// FuzzDynamicReader: any bytes never panic; accepted entries strictly
// increase, Size is the last end, and the index rebuilds to the same bytes
// (apart from the untrusted header csum).
func FuzzDynamicReader(f *testing.F) {
	for _, s := range fuzzIndexSeeds(f) {
		f.Add(s, int64(len(s)))
	}
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		dr, err := NewDynamicReader(bytes.NewReader(b), size)
		if err != nil {
			return
		}
		if dr.Len() == 0 || uint64(size) != HeaderSize+dr.Len()*DynamicEntrySize {
			t.Fatalf("Len %d does not match declared size %d", dr.Len(), size)
		}
		var entries []DynamicEntry
		var prev uint64
		for {
			_, e, err := dr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, ErrBadLength) && !errors.Is(err, ErrBadIndex) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if e.End <= prev {
				t.Fatalf("end %d after %d accepted", e.End, prev)
			}
			prev = e.End
			entries = append(entries, e)
		}
		if dr.Size() != prev || uint64(len(entries)) != dr.Len() {
			t.Fatalf("Size %d / %d entries, want %d / %d", dr.Size(), len(entries), prev, dr.Len())
		}
		x, err := ParseDynamic(b[:size])
		if err != nil {
			t.Fatalf("ParseDynamic refuses what the reader accepted: %v", err)
		}
		if x.Csum != dr.Csum() || x.Size() != dr.Size() {
			t.Fatalf("ParseDynamic csum/size differ from the reader")
		}
		for i := range x.Entries {
			off, l := x.ChunkRange(i)
			if j, ok := x.ChunkAt(off); !ok || j != i || l == 0 {
				t.Fatalf("ChunkAt(%d) = %d, %v; want %d", off, j, ok, i)
			}
		}
		re, err := BuildDynamic(*dr.Header(), entries)
		if err != nil {
			t.Fatalf("BuildDynamic: %v", err)
		}
		if !bytes.Equal(re[HeaderSize:], b[HeaderSize:size]) {
			t.Fatalf("rebuilt entries differ")
		}
	})
}

// FuzzManifest: ParseManifest never panics; every accepted manifest has
// safe archive names, a valid type, and survives Marshal → ParseManifest
// with the same signed bytes.
func FuzzManifest(f *testing.F) {
	m := manifest103()
	b, err := m.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"backup-type":"vm","backup-id":"100","backup-time":0,"files":[{"filename":"../../etc/passwd","size":1,"csum":"` + string(bytes.Repeat([]byte("0"), 64)) + `"}]}`))
	f.Add([]byte(`{"backup-type":"vm","backup-id":"100","backup-time":1,"files":[],"unprotected":null,"signature":null}`))
	f.Add([]byte(`{"backup-type":"ct","backup-id":"a","backup-time":-1,"files":[{"filename":"a\u002fb.blob","crypt-mode":"sign-only","size":18446744073709551615,"csum":"` + string(bytes.Repeat([]byte("A"), 64)) + `"}],"signature":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if m != nil {
				t.Fatal("manifest with error")
			}
			if !errors.Is(err, ErrBadManifest) && !errors.Is(err, ErrBadName) {
				t.Fatalf("error wraps neither ErrBadManifest nor ErrBadName: %v", err)
			}
			return
		}
		if !validType(m.BackupType) {
			t.Fatalf("backup-type %q accepted", m.BackupType)
		}
		for _, fi := range m.Files {
			if err := ValidArchiveName(fi.Filename); err != nil {
				t.Fatalf("unsafe name accepted: %v", err)
			}
			if _, err := ParseCryptMode(string(fi.CryptMode)); err != nil {
				t.Fatalf("crypt mode %q accepted", fi.CryptMode)
			}
		}
		s1, err := m.CanonicalSigned()
		if err != nil {
			t.Fatalf("CanonicalSigned: %v", err)
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed manifest: %v", err)
		}
		m2, err := ParseManifest(out)
		if err != nil {
			t.Fatalf("reparse of Marshal output: %v\n%s", err, out)
		}
		s2, _ := m2.CanonicalSigned()
		if !bytes.Equal(s1, s2) {
			t.Fatalf("signed bytes changed across Marshal:\n%s\n%s", s1, s2)
		}
		_, _, _ = m.KeyFingerprint()
	})
}
