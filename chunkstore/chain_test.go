package chunkstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// chunkChain returns a chain of n local stores and writes, for each
// member, the chunks copies[member] maps to their content ("" writes a
// 0-byte file, as an evicted cache copy).
func chunkChain(t *testing.T, n int, copies map[int]map[crypto.Digest]string) *Chain {
	t.Helper()
	ctx := context.Background()
	var members []Store
	for i := range n {
		s, err := OpenLocal(newStoreDir(t), true)
		if err != nil {
			t.Fatal(err)
		}
		for d, data := range copies[i] {
			if data == "" {
				p := s.ChunkLocation(d)
				os.MkdirAll(filepath.Dir(p), 0o750)
				if err := os.WriteFile(p, nil, 0o640); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := s.WriteChunk(ctx, d, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		members = append(members, s)
	}
	c, err := NewChain(members...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestChainFallThrough: a chunk is read from the first member, in order of
// preference, that has a copy; missing and 0-byte copies fall through and
// are counted as missing, a copy the reader finds damaged (Damaged) reads
// on from the next member; the counts per member add up to what was
// served; when no member has a copy, the error names them all and matches
// ErrNotFound.
func TestChainFallThrough(t *testing.T) {
	d := func(s string) crypto.Digest { return crypto.Digest(sha256.Sum256([]byte(s))) }
	a, b, c, gone := d("a"), d("b"), d("c"), d("gone")
	ch := chunkChain(t, 3, map[int]map[crypto.Digest]string{
		0: {a: "a0", b: ""},
		1: {b: "b1", c: "c1-damaged"},
		2: {a: "a2", b: "b2", c: "c2"},
	})
	ctx := context.Background()
	for _, tc := range []struct {
		chunk  crypto.Digest
		from   int
		want   string
		member int
	}{
		{a, 0, "a0", 0},
		{b, 0, "b1", 1}, // 0-byte copy in member 0
		{c, 0, "c1-damaged", 1},
		{c, 2, "c2", 2}, // the reader found member 1's copy damaged
		{a, 1, "a2", 2}, // member 1 has none
	} {
		raw, m, err := ch.ReadChunkFrom(ctx, tc.chunk, nil, 0, tc.from)
		if err != nil || string(raw) != tc.want || m != tc.member {
			t.Fatalf("ReadChunkFrom(%s, from %d) = %q from member %d, %v; want %q from %d", tc.chunk, tc.from, raw, m, err, tc.want, tc.member)
		}
		if tc.want == "c1-damaged" {
			ch.Damaged(m)
			continue
		}
		ch.Served(m, len(raw))
	}
	if raw, err := ch.ReadChunk(ctx, a, nil, 0); err != nil || string(raw) != "a0" {
		t.Fatalf("ReadChunk(a) = %q, %v", raw, err)
	}
	_, m, err := ch.ReadChunkFrom(ctx, gone, nil, 0, 0)
	if !errors.Is(err, ErrNotFound) || m != 3 {
		t.Errorf("chunk in no member: member %d, %v; want ErrNotFound past the last member", m, err)
	}
	for _, mb := range ch.Members() {
		if err == nil || !strings.Contains(err.Error(), mb.String()) {
			t.Errorf("error %v does not name member %s", err, mb)
		}
	}
	// Missing: member 0 for b (0-byte), c, gone; member 1 for a, gone;
	// member 2 for gone.
	want := []MemberStats{
		{Chunks: 2, Bytes: 4, Missing: 3},
		{Chunks: 1, Bytes: 2, Missing: 2, Damaged: 1},
		{Chunks: 2, Bytes: 4, Missing: 1},
	}
	for i, got := range ch.Stats() {
		want[i].Store = ch.Members()[i].String()
		if got != want[i] {
			t.Errorf("member %d: %+v, want %+v", i, got, want[i])
		}
	}
	if ch.String() != strings.Join([]string{ch.Members()[0].String(), ch.Members()[1].String(), ch.Members()[2].String()}, " > ") {
		t.Errorf("String() = %q, want the members in order", ch.String())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := ch.ReadChunkFrom(cctx, gone, nil, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled read: %v, want context.Canceled", err)
	}
}
