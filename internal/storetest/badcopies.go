package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
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

// badCopiesPaged checks that other keys under a chunk's key cannot hide
// its copies kept aside: with 130 of them sorting first (more than one
// listing page of OpenCounting's size), the ".9.bad" copy is still found,
// pages later; with more than bucket.MaxBadCopyPages pages of them the
// search fails as cut short (chunkstore.Outside, never a proof that the
// copies are absent), and Salvage says so.
func badCopiesPaged(t *testing.T, h Harness) {
	ctx := context.Background()
	bkt := h.NewBucket(t)
	d, blob := Chunk(t, Noise(10000, 9))
	key := "store/" + chunkstore.ChunkRelPath(d)
	h.Put(t, bkt, key, blob[:10])
	h.Put(t, bkt, key+".9.bad", blob)
	junk := func(from, to int) {
		for i := from; i < to; i++ {
			h.Put(t, bkt, fmt.Sprintf("%s.0junk%05d", key, i), []byte{1})
		}
	}
	junk(0, 130)
	s, pages := h.OpenCounting(t, bkt, "store")
	defer s.Close()
	bc := s.(chunkstore.BadCopies)
	before := pages()
	names, err := bc.ListBadCopies(ctx, d)
	if want := []string{chunkstore.BadName(d, 9)}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("ListBadCopies behind 130 other keys: %q, %v; want %q", names, err, want)
	}
	if n := pages() - before; n < 2 {
		t.Errorf("ListBadCopies read %d listing page(s), want more than one", n)
	}

	junk(130, 1100) // more than MaxBadCopyPages pages of 100
	before = pages()
	names, err = bc.ListBadCopies(ctx, d)
	if !errors.Is(err, bucket.ErrBadCopySearchCut) || !chunkstore.Outside(err) || chunkstore.Proven(err) || names != nil {
		t.Fatalf("ListBadCopies behind 1100 other keys: %q, %v; want the search cut short (outside the data)", names, err)
	}
	if n := pages() - before; n > bucket.MaxBadCopyPages {
		t.Errorf("ListBadCopies read %d listing pages, want at most %d", n, bucket.MaxBadCopyPages)
	}
	failed := fmt.Errorf("chunk %s: %w", d, chunkstore.ErrNotFound)
	_, _, err = chunkstore.Salvage(ctx, s, d, failed, nil, 0, func([]byte) error { return nil })
	if !chunkstore.Outside(err) || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("Salvage behind 1100 other keys: %v; want outside the data, saying the search was cut short", err)
	}
}
