package bootcheck

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodePPM(t *testing.T) {
	img, err := DecodePPM(strings.NewReader("P6\n# QEMU\n2 1\n255\n\xff\x00\x00\x00\x80\xff"))
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Pix; !bytes.Equal(got, []byte{0xff, 0, 0, 0xff, 0, 0x80, 0xff, 0xff}) {
		t.Fatalf("pixels % x", got)
	}
	for _, bad := range []string{"", "P5\n1 1\n255\n\x00", "P6\n1 1\n65535\n\x00\x00\x00", "P6\n2 2\n255\n\x00\x00\x00", "P6\n100000 100000\n255\n", "P6\n0 1\n255\n", "P6\n1 x\n255\n"} {
		if _, err := DecodePPM(strings.NewReader(bad)); err == nil {
			t.Errorf("DecodePPM(%q): no error", bad)
		}
	}
}

func TestPPMToPNG(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "s.ppm"), filepath.Join(dir, "s.png")
	os.WriteFile(src, []byte("P6 1 1 255 \x10\x20\x30"), 0o644)
	if err := PPMToPNG(src, dst); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(dst)
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(0, 0).RGBA(); r>>8 != 0x10 || g>>8 != 0x20 || b>>8 != 0x30 {
		t.Fatalf("pixel %v", img.At(0, 0))
	}
}

func FuzzDecodePPM(f *testing.F) {
	f.Add([]byte("P6\n2 1\n255\n\xff\x00\x00\x00\x80\xff"))
	f.Add([]byte("P6 1 1 15 \x0f\x00\x07"))
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := DecodePPM(bytes.NewReader(data))
		if err == nil && (img.Bounds().Dx() < 1 || img.Bounds().Dy() < 1) {
			t.Fatalf("empty image without error")
		}
	})
}
