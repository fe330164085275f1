package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// DynamicEntrySize is the size in bytes of one dynamic index entry: u64le end
// offset followed by a 32-byte digest (§4.1).
const DynamicEntrySize = 40

// DynamicHeader is the decoded 4096-byte header of a .didx file (§4.1).
type DynamicHeader struct {
	UUID      [16]byte // random per index file
	CTime     int64    // creation time, Unix epoch seconds
	IndexCsum [32]byte // SHA256 of all entry bytes as stored by the writer: informational, never trusted
}

// MaxDynamicChunkSize is the longest chunk a dynamic index may hold, in
// bytes: 16 MiB, the most PBS's chunker cuts (4 × the largest average chunk
// size of 4 MiB, §4.2).
const MaxDynamicChunkSize = 16 << 20

// DynamicEntry is one chunk of a dynamic index: the chunk covers
// [previous End, End) of the archive stream, in bytes (§4.2).
type DynamicEntry struct {
	End    uint64
	Digest crypto.Digest
}

// ParseDynamicHeader decodes and validates the header of a dynamic index
// (§4.1). hdr must hold at least the first HeaderSize bytes; fileSize is the
// total file length in bytes. Errors: ErrBadMagic; ErrBadLength when fileSize
// is not 4096 + 40·N with N > 0.
func ParseDynamicHeader(hdr []byte, fileSize int64) (*DynamicHeader, error) {
	if len(hdr) < HeaderSize || fileSize < HeaderSize {
		n := min(int64(len(hdr)), fileSize)
		return nil, fmt.Errorf("%w: dynamic index: %d bytes, shorter than the %d-byte header", ErrBadLength, n, HeaderSize)
	}
	if err := checkMagic(hdr, MagicDynamic, "dynamic index"); err != nil {
		return nil, err
	}
	if rest := fileSize - HeaderSize; rest%DynamicEntrySize != 0 {
		return nil, fmt.Errorf("%w: dynamic index: file is %d bytes; %d bytes after the header is not a multiple of %d",
			ErrBadLength, fileSize, rest, DynamicEntrySize)
	} else if rest == 0 {
		return nil, fmt.Errorf("%w: dynamic index: file is %d bytes, no entries after the header", ErrBadLength, fileSize)
	}
	h := &DynamicHeader{CTime: int64(binary.LittleEndian.Uint64(hdr[0x18:]))}
	copy(h.UUID[:], hdr[0x08:0x18])
	copy(h.IndexCsum[:], hdr[0x20:0x40])
	return h, nil
}

// MarshalBinary encodes the header as the 4096 bytes of §4.1 (reserved bytes zero).
func (h *DynamicHeader) MarshalBinary() ([]byte, error) {
	b := make([]byte, HeaderSize)
	copy(b, MagicDynamic[:])
	copy(b[0x08:], h.UUID[:])
	binary.LittleEndian.PutUint64(b[0x18:], uint64(h.CTime))
	copy(b[0x20:], h.IndexCsum[:])
	return b, nil
}

// DynamicReader streams the entries of a .didx file (§4) from an io.Reader,
// checks that end offsets strictly increase, and recomputes the index csum
// and archive size. It is not safe for concurrent use.
type DynamicReader struct {
	hdr *DynamicHeader
	e   *entryReader
	end uint64 // end of the last entry read
	buf [DynamicEntrySize]byte
}

// NewDynamicReader reads the header from r (positioned at the start of the
// file) and validates it with ParseDynamicHeader against fileSize, the total
// file length in bytes. ErrBadLength if r ends inside the header.
func NewDynamicReader(r io.Reader, fileSize int64) (*DynamicReader, error) {
	if fileSize < HeaderSize {
		return nil, fmt.Errorf("%w: dynamic index: file is %d bytes, shorter than the %d-byte header", ErrBadLength, fileSize, HeaderSize)
	}
	hdr := make([]byte, HeaderSize)
	if n, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: dynamic index: stream ended at byte %d inside the %d-byte header (file length given as %d)",
				ErrBadLength, n, HeaderSize, fileSize)
		}
		return nil, fmt.Errorf("dynamic index: reading header: %w", err)
	}
	h, err := ParseDynamicHeader(hdr, fileSize)
	if err != nil {
		return nil, err
	}
	n := uint64(fileSize-HeaderSize) / DynamicEntrySize
	return &DynamicReader{hdr: h, e: newEntryReader(r, "dynamic index", DynamicEntrySize, n)}, nil
}

// Header returns the parsed header (its IndexCsum is not trusted).
func (r *DynamicReader) Header() *DynamicHeader { return r.hdr }

// Len returns the number of entries N the file length implies.
func (r *DynamicReader) Len() uint64 { return r.e.n }

// Next returns the next entry and its position. The chunk covers
// [previous end, e.End) bytes of the archive. An end that does not strictly
// increase, or a chunk longer than MaxDynamicChunkSize, returns ErrBadIndex;
// a short/long stream ErrBadLength; after the
// last entry (and a check that the stream ends there) io.EOF. Errors are sticky.
func (r *DynamicReader) Next() (pos uint64, e DynamicEntry, err error) {
	pos = r.e.pos
	if _, err = r.e.read(r.buf[:]); err != nil {
		return pos, e, err
	}
	e.End = binary.LittleEndian.Uint64(r.buf[:8])
	copy(e.Digest[:], r.buf[8:])
	if e.End <= r.end {
		r.e.err = fmt.Errorf("%w: dynamic index: entry %d (file offset %d) ends at %d, not after the previous end %d",
			ErrBadIndex, pos, HeaderSize+pos*DynamicEntrySize, e.End, r.end)
		return pos, DynamicEntry{}, r.e.err
	}
	if e.End-r.end > MaxDynamicChunkSize {
		r.e.err = fmt.Errorf("%w: dynamic index: entry %d (file offset %d) is a chunk of %d bytes [%d,%d), PBS cuts at most %d",
			ErrBadIndex, pos, HeaderSize+pos*DynamicEntrySize, e.End-r.end, r.end, e.End, MaxDynamicChunkSize)
		return pos, DynamicEntry{}, r.e.err
	}
	r.end = e.End
	return pos, e, nil
}

// Size returns the end offset of the last entry read: after io.EOF, the
// archive length in bytes to compare with the manifest size (§6.2).
func (r *DynamicReader) Size() uint64 { return r.end }

// Csum returns SHA256 of all entry bytes read so far: after io.EOF, the
// index csum to compare with the manifest (§4.2, §6.2).
func (r *DynamicReader) Csum() [32]byte { return r.e.sum() }

// DynamicIndex is a fully loaded and validated dynamic index.
type DynamicIndex struct {
	Header  DynamicHeader
	Entries []DynamicEntry // at least one, ends strictly increasing
	Csum    [32]byte       // recomputed SHA256 of the entry bytes (§4.2)
}

// ParseDynamic parses and validates a whole .didx file held in b (§4),
// with the same checks and errors as DynamicReader.
func ParseDynamic(b []byte) (*DynamicIndex, error) {
	r, err := NewDynamicReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	x := &DynamicIndex{Header: *r.Header(), Entries: make([]DynamicEntry, 0, r.Len())}
	for {
		_, e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		x.Entries = append(x.Entries, e)
	}
	x.Csum = r.Csum()
	return x, nil
}

// Size returns the archive length in bytes: the last entry's end (§4.2).
func (x *DynamicIndex) Size() uint64 {
	if len(x.Entries) == 0 {
		return 0
	}
	return x.Entries[len(x.Entries)-1].End
}

// ChunkRange returns the byte range [offset, offset+length) of chunk i in
// the archive; (Size(), 0) for i out of range.
func (x *DynamicIndex) ChunkRange(i int) (offset, length uint64) {
	if i < 0 || i >= len(x.Entries) {
		return x.Size(), 0
	}
	if i > 0 {
		offset = x.Entries[i-1].End
	}
	return offset, x.Entries[i].End - offset
}

// ChunkAt returns the index of the chunk containing archive byte offset off
// (binary search on the ends, §4.2), or false if off >= Size().
func (x *DynamicIndex) ChunkAt(off uint64) (int, bool) {
	i := sort.Search(len(x.Entries), func(i int) bool { return x.Entries[i].End > off })
	return i, i < len(x.Entries)
}

// DynamicWriter writes a .didx file (§4): entries are added in order and
// Close writes the header with the computed index_csum. Destination handling
// is as for FixedWriter (streamed to a seekable dst, else buffered in memory
// at 40 bytes per entry). It is not safe for concurrent use.
type DynamicWriter struct {
	hdr DynamicHeader
	end uint64
	w   *entryWriter
	buf [DynamicEntrySize]byte
}

// NewDynamicWriter starts a dynamic index with hdr's UUID and CTime
// (IndexCsum is computed). It returns dst's error writing the placeholder header.
func NewDynamicWriter(dst io.Writer, hdr DynamicHeader) (*DynamicWriter, error) {
	w, err := newEntryWriter(dst, "dynamic index")
	if err != nil {
		return nil, err
	}
	hdr.IndexCsum = [32]byte{}
	return &DynamicWriter{hdr: hdr, w: w}, nil
}

// Add appends a chunk ending at archive offset end (exclusive, bytes). end
// must be greater than the previous end (ErrBadIndex otherwise).
func (w *DynamicWriter) Add(end uint64, d crypto.Digest) error {
	if end <= w.end {
		return fmt.Errorf("%w: dynamic index writer: entry %d ends at %d, not after the previous end %d",
			ErrBadIndex, w.w.count, end, w.end)
	}
	binary.LittleEndian.PutUint64(w.buf[:8], end)
	copy(w.buf[8:], d[:])
	if err := w.w.write(w.buf[:]); err != nil {
		return err
	}
	w.end = end
	return nil
}

// Count returns how many entries have been added.
func (w *DynamicWriter) Count() uint64 { return w.w.count }

// Size returns the archive length so far: the last end added, in bytes.
func (w *DynamicWriter) Size() uint64 { return w.end }

// Csum returns SHA256 of the entry bytes added so far (§4.2).
func (w *DynamicWriter) Csum() [32]byte { return w.w.sum() }

// Header returns the header as written by Close (IndexCsum valid after Close).
func (w *DynamicWriter) Header() DynamicHeader { return w.hdr }

// Close writes the header with index_csum; an index with no entries returns
// ErrBadIndex (§4.2). It does not close dst.
func (w *DynamicWriter) Close() error {
	if w.w.count == 0 {
		return fmt.Errorf("%w: dynamic index writer: no entries", ErrBadIndex)
	}
	w.hdr.IndexCsum = w.Csum()
	hdr, _ := w.hdr.MarshalBinary()
	return w.w.finish(hdr)
}

// BuildDynamic returns the bytes of a complete .didx file for hdr (UUID,
// CTime; IndexCsum computed) and entries (at least one, ends strictly
// increasing; ErrBadIndex otherwise).
func BuildDynamic(hdr DynamicHeader, entries []DynamicEntry) ([]byte, error) {
	var buf bytes.Buffer
	w, err := NewDynamicWriter(&buf, hdr)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if err := w.Add(e.End, e.Digest); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
