package bootcheck

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"strconv"
)

// MaxScreenPixels bounds the PPM images DecodePPM accepts: 16 Mpixels
// (64 MiB decoded), above any guest screen (4K is 8.3 Mpixels).
const MaxScreenPixels = 16 << 20

// DecodePPM decodes a binary PPM ("P6", maxval 1..255, as QEMU's
// screendump writes) into an RGBA image. Comments (#) in the header are
// skipped. A header that does not parse, an image larger than
// MaxScreenPixels, or pixel data cut short is an error.
func DecodePPM(r io.Reader) (*image.RGBA, error) {
	br := bufio.NewReader(r)
	magic, err := ppmToken(br)
	if err != nil {
		return nil, err
	}
	if magic != "P6" {
		return nil, fmt.Errorf("PPM: magic %q, want P6", magic)
	}
	var v [3]int
	for i := range v {
		tok, err := ppmToken(br)
		if err != nil {
			return nil, err
		}
		if v[i], err = strconv.Atoi(tok); err != nil || v[i] < 1 {
			return nil, fmt.Errorf("PPM: bad header value %q", tok)
		}
	}
	w, h, maxval := v[0], v[1], v[2]
	if maxval > 255 {
		return nil, fmt.Errorf("PPM: maxval %d: only 8-bit samples are read", maxval)
	}
	if w > MaxScreenPixels || h > MaxScreenPixels || w*h > MaxScreenPixels {
		return nil, fmt.Errorf("PPM: %d×%d is more than %d pixels", w, h, MaxScreenPixels)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	row := make([]byte, 3*w)
	for y := range h {
		if _, err := io.ReadFull(br, row); err != nil {
			return nil, fmt.Errorf("PPM: row %d: %w", y, err)
		}
		px := img.Pix[y*img.Stride:]
		for x := range w {
			for c := range 3 {
				px[4*x+c] = byte(int(row[3*x+c]) * 255 / maxval)
			}
			px[4*x+3] = 0xff
		}
	}
	return img, nil
}

// ppmToken reads one header token and the single whitespace after it,
// skipping whitespace and comments before it.
func ppmToken(br *bufio.Reader) (string, error) {
	var tok []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", fmt.Errorf("PPM header: %w", err)
		}
		switch {
		case b == '#' && len(tok) == 0:
			if _, err := br.ReadString('\n'); err != nil {
				return "", fmt.Errorf("PPM header: %w", io.ErrUnexpectedEOF)
			}
		case b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f':
			if len(tok) > 0 {
				return string(tok), nil
			}
		default:
			if len(tok) >= 20 {
				return "", fmt.Errorf("PPM header: token too long")
			}
			tok = append(tok, b)
		}
	}
}

// PPMToPNG converts the PPM file src to a PNG file dst.
func PPMToPNG(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := DecodePPM(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if err := png.Encode(out, img); err != nil {
		out.Close()
		os.Remove(dst)
		return fmt.Errorf("%s: %w", dst, err)
	}
	return out.Close()
}
