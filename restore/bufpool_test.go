package restore

import (
	"testing"
	"unsafe"
)

// TestBufPool: every buffer is Alignment-aligned (O_DIRECT), has the asked
// capacity rounded up to Alignment, does not overlap another, and with huge
// the first starts on a huge-page boundary.
func TestBufPool(t *testing.T) {
	for _, c := range []struct {
		n, size int
		huge    bool
	}{
		{3, 4 << 20, true},
		{3, 4<<20 + 32, false},
		{5, 64<<10 + 1, true},
		{1, 1, false},
	} {
		p, err := newBufPool(c.n, c.size, c.huge)
		if err != nil {
			t.Fatal(err)
		}
		want := alignUp(c.size)
		var addrs []uintptr
		for range c.n {
			b := p.get(nil)
			if len(b) != 0 || cap(b) != want {
				t.Errorf("%+v: buffer len %d cap %d, want 0 and %d", c, len(b), cap(b), want)
			}
			b = b[:cap(b)]
			b[0], b[len(b)-1] = 1, 1 // mapped and writable end to end
			a := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			if a%Alignment != 0 {
				t.Errorf("%+v: buffer at %#x not %d-aligned", c, a, Alignment)
			}
			for _, o := range addrs {
				if a < o+uintptr(want) && o < a+uintptr(want) {
					t.Errorf("%+v: buffers at %#x and %#x overlap", c, a, o)
				}
			}
			addrs = append(addrs, a)
		}
		if c.huge && addrs[0]%hugePage != 0 {
			t.Errorf("%+v: first buffer at %#x not on a huge-page boundary", c, addrs[0])
		}
		p.close()
	}
}
