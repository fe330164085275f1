package backup_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// cuts returns the chunk ends of data cut by a chunker of average avg,
// fed in pieces of the sizes step returns.
func cuts(avg int, data []byte, step func() int) []int {
	c := backup.NewChunker(avg)
	var ends []int
	for pos := 0; pos < len(data); {
		n := min(step(), len(data)-pos)
		for off := 0; off < n; {
			k := c.Scan(data[pos+off : pos+n])
			if k == 0 {
				break
			}
			off += k
			ends = append(ends, pos+off)
		}
		pos += n
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	return ends
}

// TestChunker: boundaries depend on the bytes only (not on how they are
// fed), chunks keep within avg/4 and avg·4 (random, constant and
// patterned data), and an edit in the middle changes only the chunks
// around it.
func TestChunker(t *testing.T) {
	const avg = 4 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 2<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	pattern := make([]byte, 1<<20)
	for i := range pattern {
		pattern[i] = byte(i >> (8 * (i % 4)))
	}
	for name, data := range map[string][]byte{"random": random, "zeros": make([]byte, 1<<20), "pattern": pattern} {
		whole := cuts(avg, data, func() int { return len(data) })
		for _, f := range []func() int{func() int { return 1 }, func() int { return 63 }, func() int { return 1 + rng.IntN(10000) }} {
			if got := cuts(avg, data, f); !slices.Equal(got, whole) {
				t.Fatalf("%s: boundaries depend on the write sizes: %d chunks vs %d", name, len(got), len(whole))
			}
		}
		prev := 0
		for i, e := range whole {
			n := e - prev
			if n > 4*avg || (n < avg/4 && i != len(whole)-1) {
				t.Fatalf("%s: chunk %d is %d bytes, outside [%d, %d]", name, i, n, avg/4, 4*avg)
			}
			prev = e
		}
		if name == "random" && (len(whole) < len(data)/avg/3 || len(whole) > 3*len(data)/avg) {
			t.Errorf("random: %d chunks for %d bytes, average %d far from %d", len(whole), len(data), len(data)/len(whole), avg)
		}
	}
	// A few bytes changed in the middle: chunks well before and after it
	// are cut the same (content-defined: boundaries resynchronise).
	edited := slices.Clone(random)
	mid := len(edited) / 2
	copy(edited[mid:], "an edit in the middle")
	a := cuts(avg, random, func() int { return 65536 })
	b := cuts(avg, edited, func() int { return 65536 })
	chunks := func(data []byte, ends []int) map[string][2]int { // content → range
		m := map[string][2]int{}
		prev := 0
		for _, e := range ends {
			m[string(data[prev:e])] = [2]int{prev, e}
			prev = e
		}
		return m
	}
	ca, cb := chunks(random, a), chunks(edited, b)
	changed := 0
	for k, r := range ca {
		if _, ok := cb[k]; !ok {
			changed++
			if r[1] < mid-4*avg || r[0] > mid+8*avg {
				t.Errorf("chunk [%d, %d) far from the edit at %d changed", r[0], r[1], mid)
			}
		}
	}
	if changed == 0 || changed > 4 {
		t.Errorf("%d chunks changed by a 21-byte edit, want 1 to 4", changed)
	}
}

// pxarTree writes a directory tree of every kind a backup meets (files of
// several sizes, a multi-MiB one, symlinks, hardlinks, an empty
// directory, names with spaces and UTF-8) with set modes, owners and
// nanosecond mtimes, and returns its path.
func pxarTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	files := map[string][]byte{
		"empty-file":         nil,
		"one":                {'x'},
		"page":               bytes.Repeat([]byte("p"), 4095),
		"sub/mixed":          fixture.Mixed(300<<10, 7),
		"sub/deeper/big.bin": fixture.Mixed(6<<20+12345, 8),
		"with space.txt":     []byte("spaces\n"),
		"ünïcødé/日本語.txt":    []byte("utf-8\n"),
	}
	for p, data := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"empty dir", "sub/empty"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("deeper/big.bin", filepath.Join(root, "sub/link")))
	must(os.Symlink("/nowhere/dangling", filepath.Join(root, "dangling")))
	must(os.Link(filepath.Join(root, "sub/mixed"), filepath.Join(root, "zz-hardlink")))
	must(os.Link(filepath.Join(root, "sub/mixed"), filepath.Join(root, "sub/deeper/hl2")))
	must(os.Chmod(filepath.Join(root, "one"), 0o4751))
	must(os.Chmod(filepath.Join(root, "page"), 0o600))
	// Owners and times last, deepest first, so that directories keep theirs.
	var all []string
	must(filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		all = append(all, p)
		return err
	}))
	for i, p := range slices.Backward(all) {
		if os.Geteuid() == 0 {
			must(os.Lchown(p, 1000+i, 2000+i))
		}
		ts := unix.NsecToTimespec(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC).UnixNano() + int64(i)*1_000_123_457)
		must(unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW))
	}
	return root
}

// checkPxarTree compares every entry of the archive with the tree at
// root: kind, mode, owner, mtime (ns), symlink targets, contents, and
// hardlinks resolving to a file with the same content; and that the
// archive holds nothing else.
func checkPxarTree(t *testing.T, a *pxar.Archive, root string) {
	t.Helper()
	seen := 0
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		e, err := a.LookupPath(filepath.ToSlash(rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		seen++
		if e.Kind == pxar.KindHardlink {
			if st.Nlink < 2 {
				t.Errorf("%s: a hardlink in the archive, %d link(s) in the tree", rel, st.Nlink)
			}
			if e, err = a.HardlinkTarget(e); err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
		}
		md := e.Metadata
		if md.Mode != uint64(st.Mode) || md.UID != st.Uid || md.GID != st.Gid || md.MTimeSec != st.Mtim.Sec || int64(md.MTimeNsec) != st.Mtim.Nsec {
			t.Errorf("%s: mode %#o uid %d gid %d mtime %d.%09d, want %#o %d %d %d.%09d", rel,
				md.Mode, md.UID, md.GID, md.MTimeSec, md.MTimeNsec, st.Mode, st.Uid, st.Gid, st.Mtim.Sec, st.Mtim.Nsec)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			want, _ := os.Readlink(p)
			if e.Kind != pxar.KindSymlink || e.LinkTarget != want {
				t.Errorf("%s: %s to %q, want a symlink to %q", rel, e.Kind, e.LinkTarget, want)
			}
		case unix.S_IFREG:
			want, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f, err := e.Open()
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			got, err := io.ReadAll(f)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			fixture.EqualBytes(t, rel, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := a.Walk(func(*pxar.Entry) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != seen {
		t.Errorf("archive holds %d entries, the tree %d", n, seen)
	}
}

// openPxar opens archive "root.pxar" of snap in store with key cc.
func openPxar(t *testing.T, store chunkstore.Store, snap index.Snapshot, cc *crypto.Config) *archive.Pxar {
	t.Helper()
	ctx := context.Background()
	ko := snapshot.KeyOptions{CryptMode: "none"}
	if cc != nil {
		ko = snapshot.KeyOptions{File: "test.key", Open: func(context.Context, string) (*crypto.Config, error) { return cc, nil }, RequireSignature: true}
	}
	keys, err := snapshot.NewKeys(ctx, ko)
	if err != nil {
		t.Fatal(err)
	}
	src, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		t.Fatal(err)
	}
	px, err := archive.OpenPxar(ctx, src, "root.pxar", archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	return px
}

// TestPxarBackup backs up a directory tree as a pxar archive, legacy and
// split, plain, encrypted and sign-only, and reads it back through the
// archive readers: every entry's content and metadata match the tree;
// the manifest lists the indexes (and the catalog for legacy) with their
// crypt mode, signed with a key; a second backup of the unchanged tree
// writes no chunk.
func TestPxarBackup(t *testing.T) {
	tree := pxarTree(t)
	_, cc := fixture.Key(t, 5)
	for _, c := range []struct {
		name     string
		legacy   bool
		key      *crypto.Config
		signOnly bool
		files    []string
		mode     index.CryptMode
	}{
		{"split-plain", false, nil, false, []string{"root.mpxar.didx", "root.ppxar.didx"}, index.CryptNone},
		{"legacy-plain", true, nil, false, []string{"root.pxar.didx", "catalog.pcat1.didx"}, index.CryptNone},
		{"split-encrypted", false, cc, false, []string{"root.mpxar.didx", "root.ppxar.didx"}, index.CryptEncrypt},
		{"legacy-encrypted", true, cc, false, []string{"root.pxar.didx", "catalog.pcat1.didx"}, index.CryptEncrypt},
		{"split-sign-only", false, cc, true, []string{"root.mpxar.didx", "root.ppxar.didx"}, index.CryptSignOnly},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			src := backup.Source{Name: "root.pxar", Path: tree}
			opts := backup.Options{Snapshot: fixture.Snap(t, "", "host", "h1", fixture.T0), Key: c.key, SignOnly: c.signOnly, PxarLegacy: c.legacy}
			res, st, err := run(t, dir, opts, src)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range res.Manifest.Files {
				names = append(names, f.Filename)
				if f.CryptMode != c.mode {
					t.Errorf("%s: crypt mode %s, want %s", f.Filename, f.CryptMode, c.mode)
				}
			}
			if !slices.Equal(names, c.files) {
				t.Fatalf("manifest lists %v, want %v", names, c.files)
			}
			if st.Chunks.Load() != st.Uploaded.Load()+st.DedupHits.Load() || st.Uploaded.Load() == 0 || st.ZeroChunks.Load() != 0 {
				t.Errorf("stats: %d chunks, %d uploaded, %d repeated, %d zero", st.Chunks.Load(), st.Uploaded.Load(), st.DedupHits.Load(), st.ZeroChunks.Load())
			}
			store := fixture.OpenStore(t, dir)
			px := openPxar(t, store, opts.Snapshot, c.key)
			if (px.Payload != nil) == c.legacy {
				t.Fatalf("payload stream %v for legacy %v", px.Payload != nil, c.legacy)
			}
			checkPxarTree(t, px.Archive, tree)
			if c.legacy {
				checkCatalog(t, dir, opts.Snapshot, c.key, tree)
			}

			// The unchanged tree again: every chunk is found in the store.
			opts.Snapshot.Time++
			_, st2, err := run(t, dir, opts, src)
			if err != nil {
				t.Fatal(err)
			}
			if st2.Uploaded.Load() != 0 || st2.Existing.Load() != st.Uploaded.Load() || st2.Chunks.Load() != st.Chunks.Load() {
				t.Errorf("second backup: %d chunks, %d uploaded, %d existing; want %d chunks, 0 uploaded, %d existing",
					st2.Chunks.Load(), st2.Uploaded.Load(), st2.Existing.Load(), st.Chunks.Load(), st.Uploaded.Load())
			}
		})
	}
}

// checkCatalog reads catalog.pcat1.didx: it holds the archive as one top
// directory with as many entries as the tree.
func checkCatalog(t *testing.T, dir string, snap index.Snapshot, cc *crypto.Config, tree string) {
	t.Helper()
	m := fixture.Manifest(t, dir, snap)
	r, err := archive.Open(context.Background(), fixture.OpenStore(t, dir), snap.Dir(), m, "catalog.pcat1.didx", cc, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cat, err := pxar.OpenCatalog(r, r.Size())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := cat.Walk(func(e pxar.CatalogEntry) error { got = append(got, e.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	want := 0
	filepath.WalkDir(tree, func(string, fs.DirEntry, error) error { want++; return nil })
	if len(got) != want || !slices.Contains(got, "root.pxar.didx/sub/deeper/big.bin") {
		t.Errorf("catalog lists %d entries, want %d (the tree's under root.pxar.didx): %q", len(got), want, got)
	}
}

// BenchmarkChunker measures Scan over random data at the archive average.
func BenchmarkChunker(b *testing.B) {
	data := make([]byte, 64<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		c := backup.NewChunker(backup.DefaultDynamicChunkSize)
		for p := data; len(p) > 0; {
			n := c.Scan(p)
			if n == 0 {
				break
			}
			p = p[n:]
		}
	}
}

// TestPxarBackupTwoArchives: two legacy pxar archives in one snapshot
// share one catalog, one top directory per archive.
func TestPxarBackupTwoArchives(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	fixture.WriteFile(t, a, "x", []byte("x"))
	fixture.WriteFile(t, b, "y", []byte("y"))
	dir := fixture.NewStore(t)
	snap := fixture.Snap(t, "", "host", "h2", fixture.T0)
	res, _, err := run(t, dir, backup.Options{Snapshot: snap, PxarLegacy: true},
		backup.Source{Name: "root.pxar", Path: a}, backup.Source{Name: "etc.pxar", Path: b})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range res.Manifest.Files {
		names = append(names, f.Filename)
	}
	if want := []string{"root.pxar.didx", "etc.pxar.didx", "catalog.pcat1.didx"}; !slices.Equal(names, want) {
		t.Fatalf("manifest lists %v, want %v", names, want)
	}
	m := fixture.Manifest(t, dir, snap)
	r, err := archive.Open(context.Background(), fixture.OpenStore(t, dir), snap.Dir(), m, "catalog.pcat1.didx", nil, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cat, err := pxar.OpenCatalog(r, r.Size())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := cat.Walk(func(e pxar.CatalogEntry) error { got = append(got, e.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"root.pxar.didx/x", "etc.pxar.didx/y"} {
		if !slices.Contains(got, w) {
			t.Errorf("catalog lacks %s: %q", w, got)
		}
	}
}
