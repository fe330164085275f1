package chunkstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"

	"github.com/klauspost/compress/zstd"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// BlobKind identifies a DataBlob's format by its 8-byte magic (§2.1).
type BlobKind int

// The four DataBlob kinds in use (§2.1).
const (
	KindUncompressed BlobKind = iota + 1
	KindCompressed
	KindEncrypted
	KindEncryptedCompressed
)

// Magic numbers, §2.1 / §10.1.
var (
	MagicUncompressed        = [8]byte{0x42, 0xab, 0x38, 0x07, 0xbe, 0x83, 0x70, 0xa1}
	MagicCompressed          = [8]byte{0x31, 0xb9, 0x58, 0x42, 0x6f, 0xb6, 0xa3, 0x7f}
	MagicEncrypted           = [8]byte{0x7b, 0x67, 0x85, 0xbe, 0x22, 0x2d, 0x4c, 0xf0}
	MagicEncryptedCompressed = [8]byte{0xe6, 0x59, 0x1b, 0xbf, 0x0b, 0xbf, 0xd8, 0x0b}
	magicAuth                = [8]byte{0x1f, 0x87, 0xee, 0xe2, 0x91, 0xce, 0x05, 0x02}
	magicAuthCompressed      = [8]byte{0x7e, 0xa6, 0x0f, 0xbe, 0x91, 0x1f, 0xa9, 0x60}
)

// Header sizes in bytes, §2.2.
const (
	PlainHeaderSize     = 12
	EncryptedHeaderSize = 44
)

// Encrypted reports whether blobs of this kind are AES-GCM encrypted.
func (k BlobKind) Encrypted() bool { return k == KindEncrypted || k == KindEncryptedCompressed }

// Compressed reports whether blobs of this kind carry a zstd frame.
func (k BlobKind) Compressed() bool { return k == KindCompressed || k == KindEncryptedCompressed }

// HeaderSize is 12 for plain kinds and 44 for encrypted kinds (§2.2).
func (k BlobKind) HeaderSize() int {
	if k.Encrypted() {
		return EncryptedHeaderSize
	}
	return PlainHeaderSize
}

// String names the kind as its magic's label does, e.g. "zstd compressed blob".
func (k BlobKind) String() string {
	switch k {
	case KindUncompressed:
		return "uncompressed blob"
	case KindCompressed:
		return "zstd compressed blob"
	case KindEncrypted:
		return "encrypted blob"
	case KindEncryptedCompressed:
		return "zstd compressed encrypted blob"
	}
	return "unknown blob"
}

func (k BlobKind) magic() [8]byte {
	switch k {
	case KindUncompressed:
		return MagicUncompressed
	case KindCompressed:
		return MagicCompressed
	case KindEncrypted:
		return MagicEncrypted
	}
	return MagicEncryptedCompressed
}

// Blob decoding errors; match them with errors.Is. Each error returned by the
// codec wraps one of these with detail (magic, CRC values, sizes). All but
// ErrNoKey also match ErrDamaged.
var (
	ErrTruncated     = DamageKind("truncated blob")
	ErrEmpty         = DamageKind("empty blob (0 bytes)")
	ErrUnknownMagic  = DamageKind("unknown blob magic")
	ErrObsoleteMagic = DamageKind("obsolete blob magic")
	ErrCRC           = DamageKind("blob CRC mismatch")
	ErrNoKey         = errors.New("encrypted blob but no key given")
	ErrDecrypt       = DamageKind("blob decryption failed (wrong key or damaged data)")
	ErrDecompress    = DamageKind("zstd decompression failed")
	ErrTooLarge      = DamageKind("blob larger than allowed") // stored or decoded; the message says which
)

// MaxBlobSize is the largest plaintext the codec decodes or encodes: 128 MiB (§2.7).
const MaxBlobSize = 128 << 20

// Kind returns the kind of blob from its magic, or an error wrapping
// ErrEmpty, ErrTruncated, ErrObsoleteMagic or ErrUnknownMagic.
func Kind(blob []byte) (BlobKind, error) {
	if len(blob) == 0 {
		return 0, ErrEmpty
	}
	if len(blob) < PlainHeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, header needs %d", ErrTruncated, len(blob), PlainHeaderSize)
	}
	var m [8]byte
	copy(m[:], blob)
	var k BlobKind
	switch m {
	case MagicUncompressed:
		k = KindUncompressed
	case MagicCompressed:
		k = KindCompressed
	case MagicEncrypted:
		k = KindEncrypted
	case MagicEncryptedCompressed:
		k = KindEncryptedCompressed
	case magicAuth:
		return 0, fmt.Errorf("%w: authenticated blob v1.0 (removed before PBS 1.0)", ErrObsoleteMagic)
	case magicAuthCompressed:
		return 0, fmt.Errorf("%w: zstd compressed authenticated blob v1.0 (removed before PBS 1.0)", ErrObsoleteMagic)
	default:
		// The bytes are not echoed: the file may be anything at all.
		return 0, fmt.Errorf("%w: the first 8 bytes are none of the DataBlob magics (not a PBS blob)", ErrUnknownMagic)
	}
	if len(blob) < k.HeaderSize() {
		return 0, fmt.Errorf("%w: %d bytes, %s header needs %d", ErrTruncated, len(blob), k, k.HeaderSize())
	}
	return k, nil
}

// CheckCRC checks a blob's magic, header size and CRC-32 (§2.3) without
// decoding it: all that can be checked of an encrypted blob without its key.
// Errors wrap ErrEmpty, ErrTruncated, ErrUnknownMagic, ErrObsoleteMagic or ErrCRC.
func CheckCRC(blob []byte) error {
	k, err := Kind(blob)
	if err != nil {
		return err
	}
	stored := binary.LittleEndian.Uint32(blob[8:12])
	if got := crc32.ChecksumIEEE(blob[k.HeaderSize():]); got != stored {
		return fmt.Errorf("%w: stored %08x, computed %08x", ErrCRC, stored, got)
	}
	return nil
}

// Decoder decodes DataBlobs (§2.5). It owns a zstd decoder and scratch
// buffers; use one per goroutine. The zero value is not usable: call NewDecoder.
type Decoder struct {
	zd      *zstd.Decoder
	scratch []byte        // ciphertext||tag for GCM
	frame   []byte        // decrypted zstd frame
	hash    hash.Hash     // SHA-256 for DecodeChunk's digest check
	sum     crypto.Digest // its result
}

// NewDecoder returns a single-goroutine blob decoder.
func NewDecoder() (*Decoder, error) { return NewDecoderLimit(MaxBlobSize) }

// NewDecoderLimit returns a single-goroutine blob decoder that never
// decompresses more than limit bytes (1 … MaxBlobSize), so that a hostile
// frame without a declared size cannot make it allocate more. The limit also
// caps the zstd window, so it must be at least the window of real frames
// (8 MiB covers every ordinary zstd level).
func NewDecoderLimit(limit int) (*Decoder, error) {
	if limit <= 0 || limit > MaxBlobSize {
		limit = MaxBlobSize
	}
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(MaxBlobSize))
	if err != nil {
		return nil, err
	}
	return &Decoder{zd: zd, hash: sha256.New()}, nil
}

// Close releases the zstd decoder.
func (d *Decoder) Close() { d.zd.Close() }

// Decode checks the CRC, decrypts with cc (needed for encrypted kinds) and
// decompresses blob (it may overwrite blob's spare capacity past len(blob)), appending the plaintext to dst[:0] — pass a buffer with
// enough capacity to decode without allocating. maxSize (bytes, ≤ MaxBlobSize;
// 0 means MaxBlobSize) bounds the plaintext. It returns the plaintext, the
// blob kind, and an error wrapping one of the Err* values above.
func (d *Decoder) Decode(dst, blob []byte, cc *crypto.Config, maxSize int) ([]byte, BlobKind, error) {
	return d.decode(dst, blob, cc, maxSize, false)
}

// DecodeInPlace is Decode for a blob the caller has no further use for:
// it decodes with no buffer of its own and no copy. An encrypted payload
// is decrypted over itself (when blob has at least crypto.TagSize bytes of
// spare capacity past len(blob); otherwise as Decode does), and the
// plaintext of an uncompressed blob is returned as a slice of blob, not
// copied into dst; a compressed blob's plaintext is decompressed into
// dst[:0] as by Decode. After the call, whether it succeeded or not, blob
// and its spare capacity hold no usable blob. Errors are Decode's, for the
// same inputs.
func (d *Decoder) DecodeInPlace(dst, blob []byte, cc *crypto.Config, maxSize int) ([]byte, BlobKind, error) {
	return d.decode(dst, blob, cc, maxSize, true)
}

// decode is Decode, and with inPlace DecodeInPlace.
func (d *Decoder) decode(dst, blob []byte, cc *crypto.Config, maxSize int, inPlace bool) ([]byte, BlobKind, error) {
	if maxSize <= 0 || maxSize > MaxBlobSize {
		maxSize = MaxBlobSize
	}
	k, err := Kind(blob)
	if err != nil {
		return nil, 0, err
	}
	hs := k.HeaderSize()
	stored := binary.LittleEndian.Uint32(blob[8:12])
	if got := crc32.ChecksumIEEE(blob[hs:]); got != stored {
		return nil, k, fmt.Errorf("%w: stored %08x, computed %08x", ErrCRC, stored, got)
	}
	payload := blob[hs:]
	if k.Encrypted() {
		if cc == nil {
			return nil, k, ErrNoKey
		}
		out := dst[:0]
		if k.Compressed() {
			out = d.frame[:0]
		}
		var err error
		inBlob := false // out is the blob's own payload, decrypted in place
		if cap(blob)-len(blob) >= crypto.TagSize {
			// Join ciphertext||tag in the blob's spare capacity: no copy of the payload.
			joined := append(blob[hs:len(blob):cap(blob)], blob[28:44]...)
			if inPlace {
				// Decrypt over the ciphertext itself: no other buffer.
				out, inBlob = joined[:0], true
			}
			out, err = cc.OpenJoined(out, blob[12:28], joined)
		} else {
			out, d.scratch, err = cc.Open(out, blob[12:28], blob[28:44], payload, d.scratch)
		}
		if err != nil {
			return nil, k, fmt.Errorf("%w", ErrDecrypt)
		}
		if !k.Compressed() {
			if len(out) > maxSize {
				return nil, k, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(out), maxSize)
			}
			return out, k, nil
		}
		if !inBlob {
			d.frame = out // kept for the next frame
		}
		payload = out
	}
	if !k.Compressed() {
		if len(payload) > maxSize {
			return nil, k, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(payload), maxSize)
		}
		if inPlace {
			return payload, k, nil
		}
		return append(dst[:0], payload...), k, nil
	}
	// A frame that declares its size is checked before any allocation.
	var fh zstd.Header
	if fh.Decode(payload) == nil && fh.HasFCS && fh.FrameContentSize > uint64(maxSize) {
		return nil, k, fmt.Errorf("%w: zstd frame declares %d > %d bytes", ErrTooLarge, fh.FrameContentSize, maxSize)
	}
	out, err := d.zd.DecodeAll(payload, dst[:0])
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, k, fmt.Errorf("%w: over %d bytes (%v)", ErrTooLarge, MaxBlobSize, err)
	}
	if err != nil {
		return nil, k, fmt.Errorf("%w: %v", ErrDecompress, err)
	}
	if len(out) > maxSize {
		return nil, k, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(out), maxSize)
	}
	return out, k, nil
}

// Encoder encodes DataBlobs (§2.4). Use one per goroutine; call NewEncoder.
type Encoder struct {
	ze  *zstd.Encoder
	buf []byte
}

// NewEncoder returns a single-goroutine blob encoder using zstd at the
// fastest level (PBS uses level 1).
func NewEncoder() (*Encoder, error) {
	ze, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(false))
	if err != nil {
		return nil, err
	}
	return &Encoder{ze: ze}, nil
}

// Close releases the zstd encoder.
func (e *Encoder) Close() { e.ze.Close() }

// Encode returns a new DataBlob holding data. With compress, the zstd frame is
// kept only when strictly smaller than data (valid for every PBS version,
// §2.4, §11.5). With cc non-nil the payload is AES-256-GCM encrypted under a
// random 16-byte IV. data must be at most MaxBlobSize bytes.
func (e *Encoder) Encode(data []byte, cc *crypto.Config, compress bool) ([]byte, error) {
	return e.EncodeTo(nil, data, cc, compress)
}

// EncodeTo is Encode writing the blob into dst[:0] and returning it: with
// a dst of capacity len(data) + EncodeSlack or more the blob is built in
// place (a plain compressed chunk is compressed straight behind its
// header), with no allocation and no copy of the payload; a smaller dst is
// grown as append grows it. dst must not overlap data.
func (e *Encoder) EncodeTo(dst, data []byte, cc *crypto.Config, compress bool) ([]byte, error) {
	var iv [crypto.IVSize]byte
	if cc != nil {
		if _, err := rand.Read(iv[:]); err != nil {
			return nil, err
		}
	}
	return e.encodeIV(dst, data, cc, compress, &iv)
}

// EncodeSlack is the room in bytes beyond the data's length that EncodeTo
// needs in dst to encode any chunk in place: the encrypted header, the
// zstd frame's overhead on data it cannot compress (a frame header and 3
// bytes per 128 KiB block) and the GCM tag.
const EncodeSlack = EncryptedHeaderSize + crypto.TagSize + 4096

func (e *Encoder) encodeIV(dst, data []byte, cc *crypto.Config, compress bool, iv *[crypto.IVSize]byte) ([]byte, error) {
	if len(data) > MaxBlobSize {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(data), MaxBlobSize)
	}
	hs := KindUncompressed.HeaderSize()
	if cc != nil {
		hs = KindEncrypted.HeaderSize()
	}
	out := dst[:0]
	if cap(out) < hs {
		out = make([]byte, 0, hs+len(data)+crypto.TagSize)
	}
	out = out[:hs]
	payload := data
	compressed := false
	switch {
	case compress && cc == nil:
		// Straight behind the header; the raw data replaces it when it is
		// not smaller.
		out = e.ze.EncodeAll(data, out)
		if compressed = len(out)-hs < len(data); !compressed {
			out = append(out[:hs], data...)
		}
	case compress:
		e.buf = e.ze.EncodeAll(data, e.buf[:0])
		if len(e.buf) < len(data) {
			payload, compressed = e.buf, true
		}
	case cc == nil:
		out = append(out, data...)
	}
	var k BlobKind
	switch {
	case cc != nil && compressed:
		k = KindEncryptedCompressed
	case cc != nil:
		k = KindEncrypted
	case compressed:
		k = KindCompressed
	default:
		k = KindUncompressed
	}
	m := k.magic()
	copy(out, m[:])
	if cc != nil {
		var tag [crypto.TagSize]byte
		out, tag = cc.Seal(out, iv, payload)
		copy(out[12:28], iv[:])
		copy(out[28:44], tag[:])
	}
	binary.LittleEndian.PutUint32(out[8:12], crc32.ChecksumIEEE(out[hs:]))
	return out, nil
}
