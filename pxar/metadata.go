package pxar

import (
	"encoding/binary"
	"errors"
	"io"
)

// ErrNoPayload is matched by the error of reading a file's content from an
// archive opened with OpenMetadata.
var ErrNoPayload = errors.New("payload stream not opened (metadata only)")

// OpenMetadata opens the metadata stream (.mpxar) of a split archive
// without its payload stream, for listings: entries, sizes, attributes and
// links decode as with Open, and no byte of the payload stream is read;
// Entry.Open of a file fails with an error matching ErrNoPayload.
// payloadSize is the payload stream's size in bytes (references beyond it
// are malformed). A legacy archive opens as with Open.
func OpenMetadata(meta io.ReaderAt, metaSize, payloadSize int64) (*Archive, error) {
	return Open(meta, metaSize, noPayload{}, payloadSize)
}

// noPayload stands in for a payload stream not read: it holds the start
// marker every payload stream begins with, and nothing else.
type noPayload struct{}

func (noPayload) ReadAt(p []byte, off int64) (int, error) {
	var mark [headerSize]byte
	binary.LittleEndian.PutUint64(mark[:], typePayloadStartMark)
	binary.LittleEndian.PutUint64(mark[8:], headerSize)
	if off < 0 || off+int64(len(p)) > headerSize {
		return 0, ErrNoPayload
	}
	return copy(p, mark[off:]), nil
}
