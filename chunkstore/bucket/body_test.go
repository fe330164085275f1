package bucket

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestDecodeAndReadBody(t *testing.T) {
	data := bytes.Repeat([]byte("pbsdirect chunk "), 4096) // 64 KiB
	for _, tc := range []struct {
		name     string
		body     []byte
		encoding string
		size     int64
		limit    int64
		decoded  bool
		wantErr  error // nil: want data
		errText  string
	}{
		{"identity sized", data, "", int64(len(data)), 1 << 20, false, nil, ""},
		{"identity chunked", data, "", -1, 1 << 20, false, nil, ""},
		{"gzip", gz(t, data), "gzip", -1, 1 << 20, true, nil, ""},
		{"x-gzip upper", gz(t, data), "X-GZIP", -1, 1 << 20, true, nil, ""},
		{"labelled gzip but plain", data, "gzip", -1, 1 << 20, false, nil, ""},
		{"gzip bomb bounded", gz(t, make([]byte, 8<<20)), "gzip", -1, 1 << 20, true, chunkstore.ErrTooLarge, ""},
		{"chunked too long", data, "", -1, 1000, false, chunkstore.ErrTooLarge, ""},
		{"announced too long", data, "", int64(len(data)), 1000, false, chunkstore.ErrTooLarge, ""},
		{"shorter than announced", data, "", int64(len(data)) + 5, 1 << 20, false, io.ErrUnexpectedEOF, ""},
		{"longer than announced", data, "", int64(len(data)) - 5, 1 << 20, false, nil, "longer than its announced"},
		{"empty chunked", nil, "", -1, 1 << 20, false, chunkstore.ErrEmpty, ""},
		{"corrupt gzip", append(gz(t, data)[:40], 0xff, 0xff, 0xff), "gzip", -1, 1 << 20, true, nil, "Content-Encoding gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, decoded, err := DecodeBody(io.NopCloser(bytes.NewReader(tc.body)), tc.encoding)
			if err != nil {
				t.Fatal(err)
			}
			if decoded != tc.decoded {
				t.Errorf("decoded = %v, want %v", decoded, tc.decoded)
			}
			got, err := ReadBody(r, tc.size, tc.limit, make([]byte, 0, 16))
			r.Close()
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want %q", err, tc.errText)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("got %d bytes, want the %d original", len(got), len(data))
				}
			}
		})
	}
}
