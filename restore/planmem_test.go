package restore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// TestPlanMemory: the plan's memory per unique chunk, as Plan's doc comment
// and the README state it: at most 600 bytes allocated in all while
// planning, at most 80 bytes kept once finished.
func TestPlanMemory(t *testing.T) {
	const n = 1 << 18
	ds := make([]crypto.Digest, n)
	for i := range ds {
		binary.LittleEndian.PutUint64(ds[i][:], uint64(i)+1)
	}
	raw, err := index.BuildFixed(index.FixedHeader{Size: n * index.MinChunkSize, ChunkSize: index.MinChunkSize}, ds)
	if err != nil {
		t.Fatal(err)
	}
	ds = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	plan, _, err := planFixed(context.Background(), bufio.NewReader(bytes.NewReader(raw)), int64(len(raw)), nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	total := (after.TotalAlloc - before.TotalAlloc) / n
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d unique chunks: %d bytes each allocated while planning, %d kept", n, total, live)
	if total > 600 || live > 80 {
		t.Errorf("plan memory per unique chunk: %d bytes allocated, %d kept; want at most 600 and 80", total, live)
	}
	if len(plan.Chunks) != n {
		t.Fatalf("%d chunks planned", len(plan.Chunks))
	}
	runtime.KeepAlive(plan)
	runtime.KeepAlive(raw)
}

// TestPlanCancel: planning a large index stops when its context is
// cancelled (Ctrl-C), within planCheckEvery entries.
func TestPlanCancel(t *testing.T) {
	const n = 4 * planCheckEvery
	raw, err := index.BuildFixed(index.FixedHeader{Size: n * index.MinChunkSize, ChunkSize: index.MinChunkSize}, make([]crypto.Digest, n))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &countingReader{r: bytes.NewReader(raw)}
	if _, _, err := planFixed(ctx, r, int64(len(raw)), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if r.n > index.HeaderSize+32*planCheckEvery+1<<20 {
		t.Errorf("read %d of %d bytes after the cancel", r.n, len(raw))
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
