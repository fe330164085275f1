package chunkstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// putBad writes blob as the copy of c kept aside as generation n in the
// datastore directory dir.
func putBad(t *testing.T, dir string, c chainChunk, n int, blob []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.Dir(chunkstore.ChunkRelPath(c.d)), chunkstore.BadName(c.d, n))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func flipped(b []byte) []byte {
	b = bytes.Clone(b)
	b[len(b)/2] ^= 1
	return b
}

// TestLocalBadCopies: a directory lists the copies of a chunk kept aside
// that are non-empty regular files, in generation order, and never a
// symbolic link, an empty file or another name; it reads them bounded by
// the limit and refuses a link and a name that is not a copy's.
func TestLocalBadCopies(t *testing.T) {
	ctx := context.Background()
	c := newChainChunk(t, 1)
	s, dir := memberWith(t)
	if names, err := s.ListBadCopies(ctx, c.d); err != nil || len(names) != 0 {
		t.Fatalf("ListBadCopies without copies: %q, %v", names, err)
	}
	three := putBad(t, dir, c, 3, c.blob)
	putBad(t, dir, c, 0, c.blob)
	putBad(t, dir, c, 2, nil)
	putBad(t, dir, c, 4, c.blob) // made a link below
	outside := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(outside, c.blob, 0o644)
	link := filepath.Join(filepath.Dir(three), chunkstore.BadName(c.d, 1))
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(three), c.d.String()+".10.bad"), c.blob, 0o644)
	names, err := s.ListBadCopies(ctx, c.d)
	want := []string{chunkstore.BadName(c.d, 0), chunkstore.BadName(c.d, 3), chunkstore.BadName(c.d, 4)}
	if err != nil || !slices.Equal(names, want) {
		t.Fatalf("ListBadCopies: %q, %v; want %q", names, err, want)
	}
	if got, err := s.ReadBadCopy(ctx, names[1], nil, 0); err != nil || !bytes.Equal(got, c.blob) {
		t.Errorf("ReadBadCopy: %d bytes, %v", len(got), err)
	}
	if loc := s.BadCopyLocation(names[1]); loc != three {
		t.Errorf("BadCopyLocation: %s, want %s", loc, three)
	}
	if _, err := s.ReadBadCopy(ctx, names[1], nil, len(c.blob)-1); !errors.Is(err, chunkstore.ErrTooLarge) {
		t.Errorf("ReadBadCopy beyond its limit: %v", err)
	}
	if _, err := s.ReadBadCopy(ctx, chunkstore.BadName(c.d, 1), nil, 0); !errors.Is(err, chunkstore.ErrSymlink) {
		t.Errorf("ReadBadCopy of a link: %v, want ErrSymlink", err)
	}
	for _, name := range []string{c.d.String(), c.d.String() + ".10.bad", "../x.0.bad"} {
		if _, err := s.ReadBadCopy(ctx, name, nil, 0); err == nil {
			t.Errorf("ReadBadCopy %q: no error", name)
		}
	}
}

// deniedBad is a member whose copies kept aside cannot be looked for.
type deniedBad struct{ *chunkstore.Local }

func (deniedBad) ListBadCopies(ctx context.Context, d crypto.Digest) ([]string, error) {
	return nil, fmt.Errorf("list: %w", chunkstore.ErrDenied)
}

// TestSalvageChain: for a chunk no member has, Salvage tries each member's
// copies kept aside in order of preference and generation, and returns the
// first that passes the check; copies that fail it are skipped and said;
// none at all leaves the chunk's failure as it was; a member whose copies
// could not be looked for makes the failure one outside the data.
func TestSalvageChain(t *testing.T) {
	ctx := context.Background()
	c := newChainChunk(t, 2)
	dec, err := chunkstore.NewDecoderLimit(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	check := func(raw []byte) error {
		_, err := dec.DecodeChunk(nil, raw, c.d, len(c.data), false, nil)
		return err
	}
	for _, tc := range []struct {
		name      string
		bad       [2][]int // per member: generations whose copy is intact (≥ 0) or damaged (-n-1)
		denied    bool     // member 1's listing refused
		wantFrom  int      // member whose copy serves; -1 none
		wantGen   int
		wantText  string
		wantOuter bool
	}{
		{name: "copy in member 2", bad: [2][]int{nil, {0}}, wantFrom: 1, wantGen: 0},
		{name: "damaged copy skipped", bad: [2][]int{{-1, 1}, {0}}, wantFrom: 0, wantGen: 1},
		{name: "damaged in member 1, intact in 2", bad: [2][]int{{-1}, {2}}, wantFrom: 1, wantGen: 2},
		{name: "none", wantFrom: -1},
		{name: "all damaged", bad: [2][]int{{-1}, {-3}}, wantFrom: -1, wantText: "2 .bad copies failed too"},
		{name: "listing refused", bad: [2][]int{nil, {-1}}, denied: true, wantFrom: -1, wantOuter: true, wantText: "could not all be tried"},
		{name: "listing refused, copy in member 2", bad: [2][]int{nil, {0}}, denied: true, wantFrom: 1, wantGen: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var members []chunkstore.Store
			var dirs []string
			for i := range 2 {
				s, dir := memberWith(t)
				dirs = append(dirs, dir)
				for _, g := range tc.bad[i] {
					if g >= 0 {
						putBad(t, dir, c, g, c.blob)
					} else {
						putBad(t, dir, c, -g-1, flipped(c.blob))
					}
				}
				if i == 0 && tc.denied {
					members = append(members, deniedBad{s})
				} else {
					members = append(members, s)
				}
			}
			chain, err := chunkstore.NewChain(members...)
			if err != nil {
				t.Fatal(err)
			}
			_, failed := chain.ReadChunk(ctx, c.d, nil, 0)
			if !chunkstore.Missing(failed) {
				t.Fatalf("ReadChunk: %v, want missing", failed)
			}
			raw, loc, err := chunkstore.Salvage(ctx, chain, c.d, failed, nil, 0, check)
			if tc.wantFrom >= 0 {
				want := filepath.Join(dirs[tc.wantFrom], filepath.Dir(chunkstore.ChunkRelPath(c.d)), chunkstore.BadName(c.d, tc.wantGen))
				if err != nil || loc != want || !bytes.Equal(raw, c.blob) {
					t.Fatalf("Salvage: %s, %v; want the copy %s", loc, err, want)
				}
				return
			}
			switch {
			case err == nil:
				t.Fatalf("Salvage: %s, no error", loc)
			case tc.wantText == "" && err != failed:
				t.Errorf("Salvage without copies: %v, want the chunk's failure as it was", err)
			case !strings.Contains(err.Error(), tc.wantText):
				t.Errorf("Salvage: %v, want %q said", err, tc.wantText)
			case chunkstore.Outside(err) != tc.wantOuter || !errors.Is(err, chunkstore.ErrNotFound) || chunkstore.Damaged(err):
				t.Errorf("Salvage: %v: outside %v, want %v; still missing, not damaged", err, chunkstore.Outside(err), tc.wantOuter)
			}
		})
	}
}
