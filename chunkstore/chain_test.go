package chunkstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// chainChunk is one chunk of the chain tests: its data, digest and blob.
type chainChunk struct {
	data []byte
	d    crypto.Digest
	blob []byte
}

func newChainChunk(t *testing.T, seed uint64) chainChunk {
	t.Helper()
	data := fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: 4096})
	var nokey *crypto.Config
	return chainChunk{data: data, d: nokey.ChunkDigest(data), blob: fixture.Encode(t, data, nil, true)}
}

// memberWith returns a directory store holding the chunks given, and its
// directory.
func memberWith(t *testing.T, chunks ...chainChunk) (*chunkstore.Local, string) {
	t.Helper()
	dir := fixture.NewStore(t)
	s, err := chunkstore.OpenLocal(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range chunks {
		if _, err := s.WriteChunk(context.Background(), c.d, c.blob); err != nil {
			t.Fatal(err)
		}
	}
	return s, dir
}

// failingStore is a member whose every read fails with err.
type failingStore struct {
	chunkstore.Store
	err   error
	reads int
}

func (f *failingStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	f.reads++
	return nil, fmt.Errorf("chunk %s: %s: %w", d, f.ChunkLocation(d), f.err)
}

func (f *failingStore) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	return nil, 0, fmt.Errorf("%s: %w", rel, f.err)
}

func newChain(t *testing.T, members ...chunkstore.Store) *chunkstore.Chain {
	t.Helper()
	c, err := chunkstore.NewChain(members...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChainFallThrough: a chunk comes from the first member that has a
// copy; a member without one, with a 0-byte one or failing for a cause
// outside the data is skipped and counted missing; what each member
// served is counted in chunks and bytes, in order of preference.
func TestChainFallThrough(t *testing.T) {
	ctx := context.Background()
	a, b, e := newChainChunk(t, 1), newChainChunk(t, 2), newChainChunk(t, 3)
	first, dir1 := memberWith(t, a, e)
	second, _ := memberWith(t, a, b, e)
	third, _ := memberWith(t, b)
	// e is 0 bytes (an evicted chunk) in the first member.
	if err := os.Truncate(fixture.ChunkPath(dir1, e.d), 0); err != nil {
		t.Fatal(err)
	}
	c := newChain(t, first, second, third)
	var fall chunkstore.FallThrough = c
	if got := c.String(); got != first.String()+" > "+second.String()+" > "+third.String() {
		t.Errorf("String = %q", got)
	}
	if got := c.ChunkLocation(a.d); got != first.ChunkLocation(a.d) {
		t.Errorf("ChunkLocation = %q, want the first member's", got)
	}

	for _, x := range []struct {
		c    chainChunk
		from int
		want int // member that serves it
	}{
		{a, 0, 0}, {b, 0, 1}, {e, 0, 1}, {a, 1, 1}, {b, 2, 2},
	} {
		raw, m, err := fall.ReadChunkFrom(ctx, x.c.d, nil, chunkstore.ChunkLimit(len(x.c.data)), x.from)
		if err != nil || m != x.want || string(raw) != string(x.c.blob) {
			t.Fatalf("ReadChunkFrom(%s, from %d) = member %d, %v; want member %d", x.c.d, x.from, m, err, x.want)
		}
	}
	// Nothing is served until the reader says so.
	for i, st := range c.Stats() {
		if st.Chunks != 0 || st.Bytes != 0 {
			t.Errorf("member %d counted %d chunks before Served", i, st.Chunks)
		}
	}
	for _, x := range []chainChunk{a, b, b, e} {
		if _, err := c.ReadChunk(ctx, x.d, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := []chunkstore.MemberStats{
		// Missing in the first: b and e once each above, b twice and e
		// once here.
		{Store: first.String(), Chunks: 1, Bytes: int64(len(a.blob)), Missing: 2 + 3},
		{Store: second.String(), Chunks: 3, Bytes: int64(2*len(b.blob) + len(e.blob))},
		{Store: third.String()},
	}
	got := c.Stats()
	for i := range got {
		// The chunks that fell through are TestChainFellThroughRecord's.
		got[i].FellThrough, got[i].FellThroughUnlisted = nil, 0
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Stats =\n %+v, want\n %+v", got, want)
	}
}

// TestChainNoCopy: when no member has a usable copy the error joins every
// member's, so that it proves the chunk missing only when every member
// said so; one member failing for a cause outside the data makes the
// whole error outside (never taken for damage); the caller's context
// ending stops at once.
func TestChainNoCopy(t *testing.T) {
	ctx := context.Background()
	x := newChainChunk(t, 4)
	empty1, _ := memberWith(t)
	empty2, _ := memberWith(t)
	unreachable := &failingStore{Store: empty2, err: chunkstore.ErrUnavailable}
	denied := &failingStore{Store: empty2, err: chunkstore.ErrDenied}
	for _, c := range []struct {
		name                      string
		members                   []chunkstore.Store
		missing, outside, damaged bool
	}{
		{"one member, missing", []chunkstore.Store{empty1}, true, false, false},
		{"all missing", []chunkstore.Store{empty1, empty2}, true, false, false},
		{"missing, then unreachable", []chunkstore.Store{empty1, unreachable}, false, true, false},
		{"denied, then missing", []chunkstore.Store{denied, empty1}, false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := newChain(t, c.members...)
			_, m, err := ch.ReadChunkFrom(ctx, x.d, nil, 0, 0)
			if err == nil || m != len(c.members) {
				t.Fatalf("ReadChunkFrom = member %d, %v; want an error past the last member", m, err)
			}
			if chunkstore.Missing(err) != c.missing || chunkstore.Outside(err) != c.outside || chunkstore.Damaged(err) != c.damaged {
				t.Errorf("%v: Missing %v Outside %v Damaged %v; want %v %v %v", err,
					chunkstore.Missing(err), chunkstore.Outside(err), chunkstore.Damaged(err), c.missing, c.outside, c.damaged)
			}
			if !strings.Contains(err.Error(), x.d.String()) {
				t.Errorf("%v: does not name the chunk", err)
			}
			for i, st := range ch.Stats() {
				if st.Missing != 1 || st.Chunks != 0 {
					t.Errorf("member %d: %+v, want 1 missing", i, st)
				}
			}
			// Past the last member: missing, naming it.
			_, _, err = ch.ReadChunkFrom(ctx, x.d, nil, 0, len(c.members))
			if !chunkstore.Missing(err) {
				t.Errorf("ReadChunkFrom past the end: %v, want missing", err)
			}
		})
	}
	t.Run("context ends", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		after := &failingStore{Store: empty2, err: chunkstore.ErrNotFound}
		ch := newChain(t, &failingStore{Store: empty1, err: context.Canceled}, after)
		if _, _, err := ch.ReadChunkFrom(cctx, x.d, nil, 0, 0); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadChunkFrom = %v, want context.Canceled", err)
		}
		if after.reads != 0 {
			t.Errorf("the next member was read %d times after the context ended", after.reads)
		}
	})
}

// TestChainDamagedCopy: a copy that reads but fails the reader's check is
// counted damaged in its member, and the reader gets the next member's
// copy; a reader that accepts it counts it served there.
func TestChainDamagedCopy(t *testing.T) {
	ctx := context.Background()
	x := newChainChunk(t, 5)
	_, dir1 := memberWith(t, x)
	second, _ := memberWith(t, x)
	fixture.FlipByte(t, fixture.ChunkPath(dir1, x.d), -1)
	c := newChain(t, fixture.OpenStore(t, dir1), second)
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	raw, m, err := c.ReadChunkFrom(ctx, x.d, nil, chunkstore.ChunkLimit(len(x.data)), 0)
	if err != nil || m != 0 {
		t.Fatalf("ReadChunkFrom = member %d, %v", m, err)
	}
	if _, err := dec.DecodeChunk(nil, raw, x.d, len(x.data), false, nil); !chunkstore.Damaged(err) {
		t.Fatalf("the flipped copy decoded: %v", err)
	}
	c.Damaged(x.d, m, chunkstore.ErrDamaged)
	raw, m, err = c.ReadChunkFrom(ctx, x.d, nil, chunkstore.ChunkLimit(len(x.data)), m+1)
	if err != nil || m != 1 {
		t.Fatalf("next copy: member %d, %v", m, err)
	}
	if _, err := dec.DecodeChunk(nil, raw, x.d, len(x.data), false, nil); err != nil {
		t.Fatalf("the second copy: %v", err)
	}
	c.Served(x.d, m, len(raw))
	st := c.Stats()
	if st[0].Damaged != 1 || st[0].Chunks != 0 || st[0].Missing != 0 || st[1].Chunks != 1 || st[1].Bytes != int64(len(raw)) || st[1].Damaged != 0 {
		t.Errorf("Stats = %+v", st)
	}
	// The chain states its capabilities by name, and no writes.
	var s chunkstore.Store = c
	if _, ok := s.(chunkstore.WriteStore); ok {
		t.Error("a chain is a WriteStore")
	}
	if _, ok := s.(chunkstore.MemberStore); !ok {
		t.Error("a chain is not a MemberStore")
	}
}

// TestChainPinsSnapshot: once a snapshot's manifest came from a member,
// the snapshot's other files come from that member first, even where a
// member before it has them too; a member failing for an outside cause
// falls through for files as for chunks.
func TestChainPinsSnapshot(t *testing.T) {
	ctx := context.Background()
	const snap = "vm/100/2026-11-01T00:00:00Z"
	first, _ := memberWith(t)
	second, _ := memberWith(t)
	for _, w := range []struct {
		s    *chunkstore.Local
		rel  string
		data string
	}{
		{first, snap + "/drive-scsi0.img.fidx", "first, partial"},
		{second, snap + "/index.json.blob", "manifest"},
		{second, snap + "/drive-scsi0.img.fidx", "second"},
		{first, "vm/100/owner", "first owner"},
		{second, "vm/100/owner", "second owner"},
	} {
		if err := w.s.WriteFile(ctx, w.rel, []byte(w.data)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(c *chunkstore.Chain, rel string) string {
		t.Helper()
		r, _, err := c.OpenFile(ctx, rel)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	c := newChain(t, &failingStore{Store: first, err: chunkstore.ErrUnavailable}, first, second)
	if got := read(c, snap+"/drive-scsi0.img.fidx"); got != "first, partial" {
		t.Errorf("before the manifest: %q, want the first member's", got)
	}
	if got := read(c, snap+"/index.json.blob"); got != "manifest" {
		t.Errorf("manifest %q", got)
	}
	if got := read(c, snap+"/drive-scsi0.img.fidx"); got != "second" {
		t.Errorf("after the manifest: %q, want the member that served it", got)
	}
	if got := read(c, "vm/100/owner"); got != "first owner" {
		t.Errorf("outside the snapshot: %q, want the first member that has it", got)
	}
	_, _, err := c.OpenFile(ctx, snap+"/nope.blob")
	if !errors.Is(err, chunkstore.ErrNotFound) || !chunkstore.Outside(err) {
		t.Errorf("a file none has, one member unreachable: %v; want not found and outside", err)
	}
}
