package storetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// badCopies checks chunkstore.BadCopies: the copies of a chunk kept aside
// ("<digest>.N.bad" beside its key) are listed in generation order, and
// nothing else under the chunk's key (another generation's spelling, a
// temp object, another chunk's copies, the chunk itself); each reads back
// as stored, bounded by the limit, and is named by its object URL; a name
// that is not a copy's is refused. A chunk without copies lists none.
func badCopies(t *testing.T, h Harness) {
	ctx := context.Background()
	bkt := h.NewBucket(t)
	s := h.Open(t, bkt, "store", true)
	bc, ok := s.(chunkstore.BadCopies)
	if !ok {
		t.Fatalf("%T is no chunkstore.BadCopies", s)
	}
	d, blob := Chunk(t, Noise(10000, 7))
	d2, _ := Chunk(t, Noise(10000, 8))
	if names, err := bc.ListBadCopies(ctx, d); err != nil || len(names) != 0 {
		t.Fatalf("ListBadCopies of a chunk without copies: %q, %v", names, err)
	}
	key := "store/" + chunkstore.ChunkRelPath(d)
	h.Put(t, bkt, key, blob[:10])
	for _, suffix := range []string{".3.bad", ".0.bad", ".10.bad", ".x.bad", ".0.bad.tmp", ".0.BAD"} {
		h.Put(t, bkt, key+suffix, blob)
	}
	h.Put(t, bkt, "store/"+chunkstore.ChunkRelPath(d2)+".0.bad", blob)
	names, err := bc.ListBadCopies(ctx, d)
	want := []string{chunkstore.BadName(d, 0), chunkstore.BadName(d, 3)}
	if err != nil || !slices.Equal(names, want) {
		t.Fatalf("ListBadCopies: %q, %v; want %q", names, err, want)
	}
	for _, name := range names {
		got, err := bc.ReadBadCopy(ctx, name, nil, 0)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("ReadBadCopy %s: %d bytes, %v", name, len(got), err)
		}
		if loc := bc.BadCopyLocation(name); loc != h.Scheme+"://"+bkt+"/"+key+strings.TrimPrefix(name, d.String()) {
			t.Errorf("BadCopyLocation %s: %s", name, loc)
		}
	}
	if _, err := bc.ReadBadCopy(ctx, names[0], nil, len(blob)-1); !errors.Is(err, chunkstore.ErrTooLarge) {
		t.Errorf("ReadBadCopy beyond its limit: %v, want ErrTooLarge", err)
	}
	if _, err := bc.ReadBadCopy(ctx, chunkstore.BadName(d, 5), nil, 0); !chunkstore.Missing(err) {
		t.Errorf("ReadBadCopy of a copy not there: %v, want missing", err)
	}
	for _, name := range []string{d.String(), d.String() + ".10.bad", "../" + chunkstore.BadName(d, 0)} {
		if _, err := bc.ReadBadCopy(ctx, name, nil, 0); err == nil {
			t.Errorf("ReadBadCopy %q: no error", name)
		}
	}
}
