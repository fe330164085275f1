package chunkstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// readChars returns the bytes this process has read so far (rchar of
// /proc/self/io), or false where that is not to be had.
func readChars(t *testing.T) (int64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// TestLocalReadChunkLimitedFromFirstByte reads a chunk file far larger
// than the rate grants before the read is stopped: the file is read in
// pieces, each after its tokens, so what was read from the disk (rchar)
// and what the report counts stay near what was granted, not the whole
// file read first and paid for afterwards.
func TestLocalReadChunkLimitedFromFirstByte(t *testing.T) {
	root := t.TempDir()
	var d crypto.Digest
	d[0], d[1] = 0xab, 0xcd
	const size = 8 << 20
	p := filepath.Join(root, filepath.FromSlash(ChunkRelPath(d)))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLocal(root, false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := ratelimit.New(ratelimit.Limits{BytesPerSecond: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	l.LimitReads(lim)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	before, haveIO := readChars(t)
	_, err = l.ReadChunk(ctx, d, nil, 0)
	after, _ := readChars(t)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadChunk of %d bytes at 64 KiB/s stopped after 0.5 s: %v, want the deadline's error", size, err)
	}
	// Generous: a few seconds' worth of the rate, far below the file.
	const most = 1 << 20
	if haveIO && after-before > most {
		t.Errorf("read %d bytes from the disk before the run stopped, want at most about what the rate granted (< %d)", after-before, most)
	}
	if got := lim.Report().Bytes; got > most {
		t.Errorf("report counts %d bytes read, want only those granted (< %d)", got, most)
	}
}
