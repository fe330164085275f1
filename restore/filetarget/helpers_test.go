package filetarget_test

import (
	"unsafe"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
)

// cs is the chunk size of the test images' backups.
const cs = restoretest.ChunkSize

// dedupImage has repeated chunks, zero chunks and a short last chunk.
func dedupImage() []byte {
	a := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: cs})
	b := fixture.Build(2, fixture.Region{Kind: fixture.Text, Len: cs})
	z := make([]byte, cs)
	var img []byte
	for _, p := range [][]byte{a, b, a, z, z, a, b, z, a} {
		img = append(img, p...)
	}
	return append(img, b[:777]...)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
