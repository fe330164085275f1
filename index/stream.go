package index

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// HeaderSize is the length in bytes of the header of both index formats
// (§3.1, §4.1). Entries start at this offset.
const HeaderSize = 4096

// Magic numbers of the two index formats: the first 8 bytes of
// SHA256("Proxmox Backup fixed sized chunk index v1.0") and
// SHA256("Proxmox Backup dynamic sized chunk index v1.0") (§2.1, §10.1).
// Treat them as constants.
var (
	MagicFixed   = [8]byte{0x2f, 0x7f, 0x41, 0xed, 0x91, 0xfd, 0x0f, 0xcd}
	MagicDynamic = [8]byte{0x1c, 0x91, 0x4e, 0xa5, 0x19, 0xba, 0xb3, 0xcd}
)

// NewUUID returns a random version-4 UUID (raw 16 bytes) for a new index
// header, as PBS writers generate one per index file (§3.1, §4.1).
func NewUUID() [16]byte {
	var u [16]byte
	rand.Read(u[:]) // never fails (crypto/rand, Go ≥ 1.24)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// readBufSize is the read-ahead window of the streaming readers.
const readBufSize = 256 << 10

// checkMagic compares the first 8 bytes of hdr with want and builds an
// ErrBadMagic error that says what the file is if it is the other index
// format. The bytes found are never echoed: the file may be anything.
func checkMagic(hdr []byte, want [8]byte, what string) error {
	var got [8]byte
	copy(got[:], hdr)
	if got == want {
		return nil
	}
	found := "not a PBS index"
	switch got {
	case MagicFixed:
		found = "that is a fixed index"
	case MagicDynamic:
		found = "that is a dynamic index"
	}
	return fmt.Errorf("%w: %s: the first 8 bytes are not its magic %s (%s)", ErrBadMagic, what, hex.EncodeToString(want[:]), found)
}

// entryReader streams fixed-size entries after an index header, hashing them
// as it goes and enforcing that the stream holds exactly n entries.
type entryReader struct {
	br        *bufio.Reader
	what      string // "fixed index" / "dynamic index", for messages
	entrySize int
	n         uint64 // number of entries the header announces
	pos       uint64 // entries read so far
	h         hash.Hash
	err       error // sticky; io.EOF after a clean end
	scratch   []byte
}

func newEntryReader(r io.Reader, what string, entrySize int, n uint64) *entryReader {
	return &entryReader{
		br:        bufio.NewReaderSize(r, readBufSize),
		what:      what,
		entrySize: entrySize,
		n:         n,
		h:         sha256.New(),
	}
}

// fileLen is the expected total file length in bytes.
func (e *entryReader) fileLen() uint64 { return HeaderSize + e.n*uint64(e.entrySize) }

// read fills buf (a whole number of entries, at most the remaining count)
// and hashes it. At the end of the entries it checks that the stream ends
// too and returns io.EOF.
func (e *entryReader) read(buf []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.pos == e.n {
		e.err = e.checkEnd()
		return 0, e.err
	}
	k := uint64(len(buf) / e.entrySize)
	if rem := e.n - e.pos; k > rem {
		k = rem
	}
	buf = buf[:k*uint64(e.entrySize)]
	got, err := io.ReadFull(e.br, buf)
	if err != nil {
		at := HeaderSize + e.pos*uint64(e.entrySize) + uint64(got)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			e.err = fmt.Errorf("%w: %s: stream ended at byte %d, header requires %d bytes (%d entries)",
				ErrBadLength, e.what, at, e.fileLen(), e.n)
		} else {
			e.err = fmt.Errorf("%s: reading entries at byte %d: %w", e.what, at, err)
		}
		return 0, e.err
	}
	e.h.Write(buf)
	e.pos += k
	return int(k), nil
}

// checkEnd verifies the stream has no bytes after the last entry.
func (e *entryReader) checkEnd() error {
	var one [1]byte
	n, err := io.ReadFull(e.br, one[:])
	if n > 0 {
		return fmt.Errorf("%w: %s: stream continues past byte %d, header requires exactly %d bytes (%d entries)",
			ErrBadLength, e.what, e.fileLen(), e.fileLen(), e.n)
	}
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("%s: reading at byte %d: %w", e.what, e.fileLen(), err)
}

func (e *entryReader) sum() [32]byte {
	var s [32]byte
	e.h.Sum(s[:0])
	return s
}

// entryWriter writes an index: a placeholder header, the entries, and the
// final header at close. A seekable destination is streamed and the header
// rewritten in place; any other destination gets the entries buffered in
// memory and everything written at close.
type entryWriter struct {
	what  string
	dst   io.Writer
	ws    io.WriteSeeker // non-nil when dst can seek
	start int64          // offset of the header in ws
	bw    *bufio.Writer  // buffered ws
	mem   []byte         // buffered entries when dst cannot seek
	h     hash.Hash
	count uint64 // entries written
	done  bool
	err   error // sticky
}

func newEntryWriter(dst io.Writer, what string) (*entryWriter, error) {
	if dst == nil {
		return nil, fmt.Errorf("%s writer: nil destination", what)
	}
	w := &entryWriter{what: what, dst: dst, h: sha256.New()}
	if ws, ok := dst.(io.WriteSeeker); ok {
		if start, err := ws.Seek(0, io.SeekCurrent); err == nil {
			w.ws, w.start = ws, start
			w.bw = bufio.NewWriterSize(ws, readBufSize)
			if _, err := w.bw.Write(make([]byte, HeaderSize)); err != nil {
				return nil, fmt.Errorf("%s writer: writing header: %w", what, err)
			}
		}
	}
	return w, nil
}

func (w *entryWriter) write(entry []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return fmt.Errorf("%s writer: write after Close", w.what)
	}
	w.h.Write(entry)
	w.count++
	if w.bw != nil {
		if _, err := w.bw.Write(entry); err != nil {
			w.err = fmt.Errorf("%s writer: %w", w.what, err)
			return w.err
		}
		return nil
	}
	w.mem = append(w.mem, entry...)
	return nil
}

func (w *entryWriter) sum() [32]byte {
	var s [32]byte
	w.h.Sum(s[:0])
	return s
}

// finish writes the final header and leaves a seekable destination
// positioned after the last entry.
func (w *entryWriter) finish(hdr []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return fmt.Errorf("%s writer: already closed", w.what)
	}
	w.done = true
	if w.bw == nil {
		if _, err := w.dst.Write(hdr); err != nil {
			return fmt.Errorf("%s writer: writing header: %w", w.what, err)
		}
		if _, err := w.dst.Write(w.mem); err != nil {
			return fmt.Errorf("%s writer: writing entries: %w", w.what, err)
		}
		w.mem = nil
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("%s writer: %w", w.what, err)
	}
	end, err := w.ws.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("%s writer: %w", w.what, err)
	}
	if _, err := w.ws.Seek(w.start, io.SeekStart); err != nil {
		return fmt.Errorf("%s writer: seeking to header: %w", w.what, err)
	}
	if _, err := w.ws.Write(hdr); err != nil {
		return fmt.Errorf("%s writer: writing header: %w", w.what, err)
	}
	if _, err := w.ws.Seek(end, io.SeekStart); err != nil {
		return fmt.Errorf("%s writer: %w", w.what, err)
	}
	return nil
}
