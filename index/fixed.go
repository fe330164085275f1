package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// FixedEntrySize is the size in bytes of one fixed index entry: a digest (§3.1).
const FixedEntrySize = 32

// FixedHeader is the decoded 4096-byte header of a .fidx file (§3.1).
type FixedHeader struct {
	UUID      [16]byte // random per index file; no meaning for readers
	CTime     int64    // creation time, Unix epoch seconds
	IndexCsum [32]byte // SHA256 of all digests as stored by the writer: informational, never trusted (§3.2)
	Size      uint64   // content length in bytes (e.g. the disk image size)
	ChunkSize uint64   // nominal chunk length in bytes, a power of two
}

// ParseFixedHeader decodes and validates the header of a fixed index (§3.1,
// §3.2). hdr must hold at least the first HeaderSize bytes of the file;
// fileSize is the total file length in bytes. It checks, in order: the magic
// (ErrBadMagic), chunk_size a power of two from MinChunkSize to MaxChunkSize
// (ErrBadChunkSize),
// size > 0 (ErrBadIndex) and fileSize == 4096 + 32·ceil(size/chunk_size)
// (ErrBadLength). Reserved bytes are not checked.
func ParseFixedHeader(hdr []byte, fileSize int64) (*FixedHeader, error) {
	if len(hdr) < HeaderSize || fileSize < HeaderSize {
		n := min(int64(len(hdr)), fileSize)
		return nil, fmt.Errorf("%w: fixed index: %d bytes, shorter than the %d-byte header", ErrBadLength, n, HeaderSize)
	}
	if err := checkMagic(hdr, MagicFixed, "fixed index"); err != nil {
		return nil, err
	}
	h := &FixedHeader{
		CTime:     int64(binary.LittleEndian.Uint64(hdr[0x18:])),
		Size:      binary.LittleEndian.Uint64(hdr[0x40:]),
		ChunkSize: binary.LittleEndian.Uint64(hdr[0x48:]),
	}
	copy(h.UUID[:], hdr[0x08:0x18])
	copy(h.IndexCsum[:], hdr[0x20:0x40])
	if err := h.validate(); err != nil {
		return nil, err
	}
	n := h.ChunkCount()
	if n > (math.MaxInt64-HeaderSize)/FixedEntrySize {
		return nil, fmt.Errorf("%w: fixed index: size %d / chunk size %d gives %d chunks, an impossible file length",
			ErrBadLength, h.Size, h.ChunkSize, n)
	}
	if want := int64(HeaderSize + n*FixedEntrySize); fileSize != want {
		return nil, fmt.Errorf("%w: fixed index: file is %d bytes, header (size %d, chunk size %d, %d chunks) requires %d",
			ErrBadLength, fileSize, h.Size, h.ChunkSize, n, want)
	}
	return h, nil
}

// MinChunkSize and MaxChunkSize bound a fixed index's chunk size in bytes:
// 64 KiB to 4 MiB, the sizes PBS accepts (verify_chunk_size, §3.2; the PBS
// server itself writes 4 MiB). A chunk size outside them is no PBS index,
// and a tiny one would turn a small index into billions of positions.
const (
	MinChunkSize = 64 << 10
	MaxChunkSize = 4 << 20
)

// validate checks the chunk size and size fields.
func (h *FixedHeader) validate() error {
	if h.ChunkSize == 0 || bits.OnesCount64(h.ChunkSize) != 1 {
		return fmt.Errorf("%w: fixed index: chunk size %d is not a non-zero power of two", ErrBadChunkSize, h.ChunkSize)
	}
	if h.ChunkSize < MinChunkSize || h.ChunkSize > MaxChunkSize {
		return fmt.Errorf("%w: fixed index: chunk size %d is outside PBS's %d to %d bytes", ErrBadChunkSize, h.ChunkSize, MinChunkSize, MaxChunkSize)
	}
	if h.Size == 0 {
		return fmt.Errorf("%w: fixed index: size 0 (an index needs at least one chunk)", ErrBadIndex)
	}
	return nil
}

// ChunkCount returns N = ceil(Size / ChunkSize), the number of digests (§3.1).
// It is 0 only for an invalid header with ChunkSize 0.
func (h *FixedHeader) ChunkCount() uint64 {
	if h.ChunkSize == 0 || h.Size == 0 {
		return 0
	}
	return (h.Size-1)/h.ChunkSize + 1
}

// ChunkRange returns the byte range [offset, offset+length) of chunk i in the
// content (§3.2). All chunks are ChunkSize bytes except a possibly shorter
// last one. For i >= ChunkCount() it returns (Size, 0).
func (h *FixedHeader) ChunkRange(i uint64) (offset, length uint64) {
	if i >= h.ChunkCount() {
		return h.Size, 0
	}
	offset = i * h.ChunkSize
	return offset, min(h.ChunkSize, h.Size-offset)
}

// FileSize returns the exact length in bytes of a .fidx file with this
// header: 4096 + 32·ChunkCount() (§3.1).
func (h *FixedHeader) FileSize() uint64 { return HeaderSize + h.ChunkCount()*FixedEntrySize }

// MarshalBinary encodes the header as the 4096 bytes of §3.1 (reserved bytes
// zero). It does not validate the fields.
func (h *FixedHeader) MarshalBinary() ([]byte, error) {
	b := make([]byte, HeaderSize)
	copy(b, MagicFixed[:])
	copy(b[0x08:], h.UUID[:])
	binary.LittleEndian.PutUint64(b[0x18:], uint64(h.CTime))
	copy(b[0x20:], h.IndexCsum[:])
	binary.LittleEndian.PutUint64(b[0x40:], h.Size)
	binary.LittleEndian.PutUint64(b[0x48:], h.ChunkSize)
	return b, nil
}

// FixedReader streams the digests of a .fidx file (§3) from an io.Reader,
// holding only a read-ahead window in memory, and recomputes the index csum.
// It is not safe for concurrent use.
type FixedReader struct {
	hdr *FixedHeader
	e   *entryReader
	buf [FixedEntrySize]byte
}

// NewFixedReader reads the 4096-byte header from r and validates it with
// ParseFixedHeader against fileSize, the total file length in bytes. r must
// be positioned at the start of the file. Errors: those of ParseFixedHeader,
// ErrBadLength if r ends inside the header, or r's read error.
func NewFixedReader(r io.Reader, fileSize int64) (*FixedReader, error) {
	if fileSize < HeaderSize {
		return nil, fmt.Errorf("%w: fixed index: file is %d bytes, shorter than the %d-byte header", ErrBadLength, fileSize, HeaderSize)
	}
	hdr := make([]byte, HeaderSize)
	if n, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: fixed index: stream ended at byte %d inside the %d-byte header (file length given as %d)",
				ErrBadLength, n, HeaderSize, fileSize)
		}
		return nil, fmt.Errorf("fixed index: reading header: %w", err)
	}
	h, err := ParseFixedHeader(hdr, fileSize)
	if err != nil {
		return nil, err
	}
	return &FixedReader{hdr: h, e: newEntryReader(r, "fixed index", FixedEntrySize, h.ChunkCount())}, nil
}

// Header returns the parsed header. Its IndexCsum is the stored, untrusted
// value; compare Csum() with the manifest instead (§6.2).
func (r *FixedReader) Header() *FixedHeader { return r.hdr }

// Next returns the next digest and its chunk position (0-based; the byte
// range is Header().ChunkRange(pos)). After the last digest it checks that
// the stream ends there and returns io.EOF. A stream shorter or longer than
// the header requires gives ErrBadLength. Errors are sticky.
func (r *FixedReader) Next() (pos uint64, d crypto.Digest, err error) {
	pos = r.e.pos
	if _, err = r.e.read(r.buf[:]); err != nil {
		return pos, d, err
	}
	copy(d[:], r.buf[:])
	return pos, d, nil
}

// NextBatch reads up to len(dst) digests into dst and returns the position of
// the first and how many were read. It returns n == 0 with io.EOF (after the
// same end-of-stream check as Next) once all digests have been read, and
// n == 0 with the error for a short/long stream or read error.
func (r *FixedReader) NextBatch(dst []crypto.Digest) (pos uint64, n int, err error) {
	pos = r.e.pos
	if len(dst) == 0 {
		return pos, 0, nil
	}
	if need := len(dst) * FixedEntrySize; cap(r.e.scratch) < need {
		r.e.scratch = make([]byte, need)
	}
	n, err = r.e.read(r.e.scratch[:len(dst)*FixedEntrySize])
	for i := 0; i < n; i++ {
		copy(dst[i][:], r.e.scratch[i*FixedEntrySize:])
	}
	return pos, n, err
}

// Count returns how many digests have been read so far.
func (r *FixedReader) Count() uint64 { return r.e.pos }

// Csum returns SHA256 of all digests read so far. After Next has returned
// io.EOF it is the index csum (§3.1) to compare with the manifest (§6.2).
func (r *FixedReader) Csum() [32]byte { return r.e.sum() }

// FixedWriter writes a .fidx file (§3.1, §3.3): digests are added in chunk
// order, and Close writes the header with the computed index_csum. If dst is
// an io.WriteSeeker that can seek, the file is streamed from dst's current
// position and the header rewritten in place at Close; otherwise the digests
// (32 bytes per chunk) are buffered in memory and the whole file is written at
// Close. The caller handles the .tmp_fidx name and rename (§3.3). It is not
// safe for concurrent use.
type FixedWriter struct {
	hdr FixedHeader
	n   uint64
	w   *entryWriter
}

// NewFixedWriter starts a fixed index with hdr's UUID, CTime, Size (content
// bytes) and ChunkSize; hdr.IndexCsum is ignored and computed. It returns
// ErrBadChunkSize or ErrBadIndex (size 0) for an invalid header, or dst's
// error writing the placeholder header.
func NewFixedWriter(dst io.Writer, hdr FixedHeader) (*FixedWriter, error) {
	hdr.IndexCsum = [32]byte{}
	if err := hdr.validate(); err != nil {
		return nil, err
	}
	w, err := newEntryWriter(dst, "fixed index")
	if err != nil {
		return nil, err
	}
	return &FixedWriter{hdr: hdr, n: hdr.ChunkCount(), w: w}, nil
}

// Add appends the digest of the next chunk. Adding more than
// Header.ChunkCount() digests returns ErrBadIndex.
func (w *FixedWriter) Add(d crypto.Digest) error {
	if c := w.Count(); c >= w.n {
		return fmt.Errorf("%w: fixed index writer: digest %d added, but size %d / chunk size %d allows only %d",
			ErrBadIndex, c, w.hdr.Size, w.hdr.ChunkSize, w.n)
	}
	return w.w.write(d[:])
}

// Count returns how many digests have been added.
func (w *FixedWriter) Count() uint64 {
	return w.w.count
}

// Csum returns SHA256 of the digests added so far: after the last one, the
// index csum for the manifest (§6.2).
func (w *FixedWriter) Csum() [32]byte { return w.w.sum() }

// Header returns the header as written by Close (IndexCsum valid after Close).
func (w *FixedWriter) Header() FixedHeader { return w.hdr }

// Close checks that exactly ChunkCount() digests were added (ErrBadIndex
// otherwise), sets index_csum and writes the header. It does not close dst.
func (w *FixedWriter) Close() error {
	if c := w.Count(); c != w.n {
		return fmt.Errorf("%w: fixed index writer: %d digests added, size %d / chunk size %d needs %d",
			ErrBadIndex, c, w.hdr.Size, w.hdr.ChunkSize, w.n)
	}
	w.hdr.IndexCsum = w.Csum()
	hdr, _ := w.hdr.MarshalBinary()
	return w.w.finish(hdr)
}

// BuildFixed returns the bytes of a complete .fidx file for hdr (UUID, CTime,
// Size, ChunkSize; IndexCsum computed) and digests, which must number exactly
// hdr.ChunkCount(). Errors as for NewFixedWriter and Close.
func BuildFixed(hdr FixedHeader, digests []crypto.Digest) ([]byte, error) {
	var buf bytes.Buffer
	w, err := NewFixedWriter(&buf, hdr)
	if err != nil {
		return nil, err
	}
	for _, d := range digests {
		if err := w.Add(d); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
