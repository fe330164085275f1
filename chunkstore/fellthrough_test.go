package chunkstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestChainFellThroughRecord: every chunk a member could not serve is
// listed under that member with why (missing, 0 bytes, damaged) and the
// member that served it in the end ("" for none), and handed to the
// FellThroughTo function.
func TestChainFellThroughRecord(t *testing.T) {
	ctx := context.Background()
	gone, empty, bad, nowhere, good := newChainChunk(t, 11), newChainChunk(t, 12), newChainChunk(t, 13), newChainChunk(t, 14), newChainChunk(t, 15)
	_, dir1 := memberWith(t, empty, bad, good)
	second, _ := memberWith(t, gone, empty, bad, good)
	if err := os.Truncate(fixture.ChunkPath(dir1, empty.d), 0); err != nil {
		t.Fatal(err)
	}
	fixture.FlipByte(t, fixture.ChunkPath(dir1, bad.d), -1)
	first := fixture.OpenStore(t, dir1)
	c := newChain(t, first, second)
	var sunk []chunkstore.FellThrough
	var sunkStores []string
	c.FellThroughTo(func(store string, f chunkstore.FellThrough) {
		sunk = append(sunk, f)
		sunkStores = append(sunkStores, store)
	})
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	// A reader as restore's: check each copy, read on past a damaged one.
	for _, x := range []chainChunk{gone, empty, bad, nowhere, good} {
		raw, m, err := c.ReadChunkFrom(ctx, x.d, nil, chunkstore.ChunkLimit(len(x.data)), 0)
		for err == nil {
			if _, derr := dec.DecodeChunk(nil, raw, x.d, len(x.data), false, nil); derr == nil {
				c.Served(x.d, m, len(raw))
				break
			} else {
				c.Damaged(x.d, m, derr)
			}
			raw, m, err = c.ReadChunkFrom(ctx, x.d, nil, chunkstore.ChunkLimit(len(x.data)), m+1)
		}
	}
	st := c.Stats()
	want := map[string]chunkstore.FellThrough{
		gone.d.String():    {Reason: chunkstore.ReasonMissing, ServedBy: second.String()},
		empty.d.String():   {Reason: chunkstore.ReasonMissing, ServedBy: second.String()},
		bad.d.String():     {Reason: chunkstore.ReasonDamaged, ServedBy: second.String()},
		nowhere.d.String(): {Reason: chunkstore.ReasonMissing},
	}
	if len(st[0].FellThrough) != len(want) || st[0].FellThroughUnlisted != 0 {
		t.Fatalf("first member's list = %+v", st[0])
	}
	for _, f := range st[0].FellThrough {
		w, ok := want[f.Digest]
		if !ok || f.Reason != w.Reason || f.ServedBy != w.ServedBy || f.Error == "" {
			t.Errorf("fell through %+v, want %+v", f, w)
		}
	}
	// The second member failed only for the chunk no store has.
	if len(st[1].FellThrough) != 1 || st[1].FellThrough[0].Digest != nowhere.d.String() || st[1].FellThrough[0].ServedBy != "" {
		t.Errorf("second member's list = %+v", st[1].FellThrough)
	}
	if len(sunk) != 5 {
		t.Errorf("FellThroughTo got %d records, want 5: %+v", len(sunk), sunk)
	}
	for i, s := range sunkStores {
		if s != first.String() && s != second.String() {
			t.Errorf("record %d names store %q", i, s)
		}
	}
}
