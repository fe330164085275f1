package chunkstore

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// chainOf returns a chain of local stores holding files (store → path →
// content), and the warnings it says.
func chainOf(t *testing.T, files ...map[string]string) (*Chain, func() []string) {
	t.Helper()
	ctx := context.Background()
	var members []Store
	for _, fs := range files {
		s, err := OpenLocal(newStoreDir(t), true)
		if err != nil {
			t.Fatal(err)
		}
		for p, data := range fs {
			if err := s.WriteFile(ctx, p, []byte(data)); err != nil {
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
	var mu sync.Mutex
	var said []string
	c.WarnTo(func(msg string) { mu.Lock(); said = append(said, msg); mu.Unlock() })
	return c, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), said...) }
}

// newStoreDir returns a fresh datastore directory holding only the last
// chunk prefix directory (as fixture.NewStore): OpenLocal(create) takes it
// as initialized instead of making 65536 prefix directories.
func newStoreDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(filepath.Join(dir, ".chunks", "ffff"), 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readAll(t *testing.T, c *Chain, rel string) string {
	t.Helper()
	r, _, err := c.OpenFile(context.Background(), rel)
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

// TestChainListUnion: a chain lists the union of its members, each
// directory from the first member that has it finished (its manifest), and
// says once per member that lacks snapshots the others hold.
func TestChainListUnion(t *testing.T) {
	const s1, s2, s3 = "vm/100/2026-11-01T00:00:00Z", "vm/100/2026-11-02T00:00:00Z", "vm/200/2026-11-02T00:00:00Z"
	c, said := chainOf(t,
		map[string]string{s1 + "/index.json.blob": "a1", s1 + "/d.fidx": "a1", s2 + "/d.fidx": "partial", "vm/100/owner": "a"},
		map[string]string{s1 + "/index.json.blob": "b1", s1 + "/d.fidx": "b1", s2 + "/index.json.blob": "b2", s2 + "/d.fidx": "b2", s3 + "/index.json.blob": "b3", "vm/100/owner": "b"},
	)
	files, err := c.ListFiles(context.Background(), "vm")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	sort.Strings(got)
	want := []string{"vm/100/" + "2026-11-01T00:00:00Z/d.fidx", s1 + "/index.json.blob", s2 + "/d.fidx", s2 + "/index.json.blob", s3 + "/index.json.blob", "vm/100/owner"}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("listed %v, want %v", got, want)
	}
	w := said()
	if len(w) != 1 || !strings.Contains(w[0], "disagree") || !strings.Contains(w[0], c.members[0].String()) {
		t.Errorf("warnings %q, want one naming the first store", w)
	}
	// s2 is finished in the second store only: its files come from there,
	// the first store's partial copy of d.fidx too once the manifest was read.
	if m := readAll(t, c, s2+"/index.json.blob"); m != "b2" {
		t.Errorf("manifest of %s from %q", s2, m)
	}
	if d := readAll(t, c, s2+"/d.fidx"); d != "b2" {
		t.Errorf("%s/d.fidx read from the store without its manifest (%q), want the manifest's store", s2, d)
	}
	// s1 is in both: the first store serves it.
	if m, d := readAll(t, c, s1+"/index.json.blob"), readAll(t, c, s1+"/d.fidx"); m != "a1" || d != "a1" {
		t.Errorf("%s read as %q, %q, want the first store's", s1, m, d)
	}
	// Stores that agree say nothing.
	c2, said2 := chainOf(t, map[string]string{s1 + "/index.json.blob": "a"}, map[string]string{s1 + "/index.json.blob": "b"})
	if _, err := c2.ListFiles(context.Background(), "vm"); err != nil {
		t.Fatal(err)
	}
	if w := said2(); len(w) != 0 {
		t.Errorf("stores that agree: warnings %q", w)
	}
}

// listFailingStore is a member whose listings fail with err.
type listFailingStore struct {
	Store
	err error
}

func (f *listFailingStore) ListFiles(ctx context.Context, dir string) ([]FileInfo, error) {
	return nil, f.err
}

// TestChainUnlisted: a member whose listing fails while the others answer
// is said once and reported by Unlisted (the listing is incomplete); a
// chain whose members all answer reports none.
func TestChainUnlisted(t *testing.T) {
	const s1 = "vm/100/2026-11-01T00:00:00Z"
	c, said := chainOf(t, map[string]string{s1 + "/index.json.blob": "a"}, map[string]string{s1 + "/index.json.blob": "a"})
	if _, err := c.ListFiles(context.Background(), "vm"); err != nil || len(c.Unlisted()) != 0 {
		t.Fatalf("all members answered: %v, unlisted %q", err, c.Unlisted())
	}
	bad := &listFailingStore{Store: c.members[1], err: ErrUnavailable}
	c.members[1] = bad
	for range 2 {
		files, err := c.ListFiles(context.Background(), "vm")
		if err != nil || len(files) != 1 {
			t.Fatalf("listing with one member failing: %v, %v", files, err)
		}
	}
	if u := c.Unlisted(); len(u) != 1 || u[0] != bad.String() {
		t.Errorf("unlisted %q, want [%s]", u, bad)
	}
	if w := said(); len(w) != 1 || !strings.Contains(w[0], "could not be listed") {
		t.Errorf("warnings %q, want one saying the store could not be listed", w)
	}
}
