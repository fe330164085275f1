package bucket

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// IsGzip reports whether a Content-Encoding header value says gzip ("gzip"
// or "x-gzip", any case; a list whose only coding is gzip).
func IsGzip(contentEncoding string) bool {
	ce := strings.ToLower(strings.TrimSpace(contentEncoding))
	return ce == "gzip" || ce == "x-gzip"
}

// DecodeBody returns the content of an object body sent with the
// Content-Encoding contentEncoding: for gzip (a gateway compressing on the
// fly, or an object stored compressed) a reader that decompresses it, else
// body itself. decoded reports whether it decompresses. A body labelled gzip
// that does not start with the gzip magic (1f 8b) is taken as it is: a
// server that already decoded it but kept the header. What the reader
// returns is bounded by the caller (ReadBody's limit) and checked as always
// (CRC, digest); Close closes body.
func DecodeBody(body io.ReadCloser, contentEncoding string) (r io.ReadCloser, decoded bool, err error) {
	if !IsGzip(contentEncoding) {
		return body, false, nil
	}
	br := bufio.NewReader(body)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		body.Close()
		return nil, false, fmt.Errorf("reading gzip-encoded body: %w", err)
	}
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return readCloser{br, body}, false, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		body.Close()
		return nil, false, fmt.Errorf("body sent with Content-Encoding gzip: %w", err)
	}
	return gzipBody{zr: zr, body: body}, true, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

type gzipBody struct {
	zr   *gzip.Reader
	body io.Closer
}

func (g gzipBody) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decoding body sent with Content-Encoding gzip: %w", err)
	}
	return n, err
}

func (g gzipBody) Close() error {
	g.zr.Close()
	return g.body.Close()
}

// ReadBody reads an object body to its end into buf[:0] (growing it as
// needed) and returns the bytes. size is the length the server announced
// (Content-Length, or the object size) or -1 when it announced none
// (Transfer-Encoding: chunked, a decoded body): with a size, a body of
// another length fails; without, reading stops with chunkstore.ErrTooLarge
// once more than limit bytes arrive, so an endless or oversized body never
// takes more than limit bytes of memory. A size above limit fails before
// anything is read. An empty body returns chunkstore.ErrEmpty.
func ReadBody(r io.Reader, size, limit int64, buf []byte) ([]byte, error) {
	switch {
	case size == 0:
		return nil, fmt.Errorf("%w (0-byte object)", chunkstore.ErrEmpty)
	case size > limit:
		return nil, fmt.Errorf("%w: object is %d bytes, at most %d expected", chunkstore.ErrTooLarge, size, limit)
	case size > 0:
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		var one [1]byte
		if n, _ := io.ReadFull(r, one[:]); n > 0 {
			return nil, fmt.Errorf("object longer than its announced %d bytes", size)
		}
		return buf, nil
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):cap(buf)]
		if over := int64(len(buf)) + int64(len(room)) - (limit + 1); over > 0 {
			room = room[:int64(len(room))-over]
		}
		n, err := r.Read(room)
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("%w: object body exceeds %d bytes", chunkstore.ErrTooLarge, limit)
		}
		if err == io.EOF {
			if len(buf) == 0 {
				return nil, fmt.Errorf("%w (0-byte object)", chunkstore.ErrEmpty)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
