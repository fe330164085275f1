package backup_test

import (
	"os"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBackupCountsOnPrevious: on a directory store, a backup counts on the
// chunks of the group's previous snapshot without writing or reading them
// back (KnownPrevious), and asks for the others before compressing them;
// it does not count on a chunk of it that is missing, empty or rewritten
// since (written again, or read back and checked), nor on a previous
// snapshot of another crypt mode or key, and not at all with NoPrevious.
func TestBackupCountsOnPrevious(t *testing.T) {
	const cs = 64 << 10
	_, keyA := fixture.Key(t, 21)
	_, keyB := fixture.Key(t, 22)
	data := fixture.Build(17, fixture.Region{Kind: fixture.Random, Len: 4 * cs}, fixture.Region{Kind: fixture.Text, Len: 4 * cs})
	const withData = 8
	for _, c := range []struct {
		name          string
		first, second *crypto.Config
		noPrevious    bool
		change        func(t *testing.T, dir string, d crypto.Digest)
		// of the second backup
		known, found, uploaded uint64
		previous               bool
	}{
		{name: "unchanged", known: withData, previous: true},
		{name: "unchanged-encrypted", first: keyA, second: keyA, known: withData, previous: true},
		{name: "no-previous", noPrevious: true, found: withData},
		{name: "other-key", first: keyA, second: keyB, uploaded: withData},
		{name: "plain-after-encrypted", first: keyA, uploaded: withData},
		{name: "chunk-removed", change: func(t *testing.T, dir string, d crypto.Digest) { os.Remove(fixture.ChunkPath(dir, d)) },
			known: withData - 1, uploaded: 1, previous: true},
		{name: "chunk-emptied", change: func(t *testing.T, dir string, d crypto.Digest) { os.Truncate(fixture.ChunkPath(dir, d), 0) },
			known: withData - 1, uploaded: 1, previous: true},
		{name: "chunk-rewritten-same", change: func(t *testing.T, dir string, d crypto.Digest) {
			b, _ := os.ReadFile(fixture.ChunkPath(dir, d))
			os.WriteFile(fixture.ChunkPath(dir, d), b, 0o644)
		}, known: withData - 1, found: 1, previous: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			src := backup.Source{Name: "drive-scsi0.img", Path: fixture.WriteFile(t, t.TempDir(), "d.raw", data)}
			opts := backup.Options{ChunkSize: cs, Key: c.first, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0)}
			if _, st, err := run(t, dir, opts, src); err != nil || st.Uploaded.Load() != withData {
				t.Fatalf("first backup: %v, %d uploaded", err, st.Uploaded.Load())
			}
			if c.change != nil {
				c.change(t, dir, c.first.ChunkDigest(data[2*cs:3*cs]))
			}
			opts.Key, opts.NoPrevious = c.second, c.noPrevious
			opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+60)
			res, st, err := run(t, dir, opts, src)
			if err != nil {
				t.Fatal(err)
			}
			wantPrev := ""
			if c.previous {
				wantPrev = "vm/100/" + fixture.Snap(t, "", "vm", "100", fixture.T0).Dir()[len("vm/100/"):]
			}
			if st.KnownPrevious.Load() != c.known || st.FoundPresent.Load() != c.found || st.Uploaded.Load() != c.uploaded ||
				st.Existing.Load() != c.known+c.found || res.Previous != wantPrev {
				t.Errorf("known %d, found %d, uploaded %d, existing %d, previous %q; want %d, %d, %d, %d, %q",
					st.KnownPrevious.Load(), st.FoundPresent.Load(), st.Uploaded.Load(), st.Existing.Load(), res.Previous,
					c.known, c.found, c.uploaded, c.known+c.found, wantPrev)
			}
		})
	}
}

// TestBackupCountsOnPreviousPxar: a directory backed up again unchanged,
// legacy and split, uploads nothing: the chunks of its archives (and the
// catalog) are known from the previous snapshot.
func TestBackupCountsOnPreviousPxar(t *testing.T) {
	tree := t.TempDir()
	fixture.WriteFile(t, tree, "a.bin", fixture.Build(3, fixture.Region{Kind: fixture.Random, Len: 3 << 20}))
	fixture.WriteFile(t, tree, "b.txt", fixture.Build(4, fixture.Region{Kind: fixture.Text, Len: 1 << 20}))
	for _, legacy := range []bool{true, false} {
		dir := fixture.NewStore(t)
		src := backup.Source{Name: "root.pxar", Path: tree}
		opts := backup.Options{PxarLegacy: legacy, Snapshot: fixture.Snap(t, "", "host", "h1", fixture.T0)}
		if _, st, err := run(t, dir, opts, src); err != nil || st.Uploaded.Load() == 0 {
			t.Fatalf("legacy %v: first backup: %v, %d uploaded", legacy, err, st.Uploaded.Load())
		}
		opts.Snapshot = fixture.Snap(t, "", "host", "h1", fixture.T0+60)
		res, st, err := run(t, dir, opts, src)
		if err != nil || st.Uploaded.Load() != 0 || st.FoundPresent.Load() != 0 || st.KnownPrevious.Load() != st.Existing.Load() || st.Existing.Load() == 0 || res.Previous == "" {
			t.Errorf("legacy %v: again: %v, uploaded %d, found %d, known %d of %d existing, previous %q; want all known", legacy, err,
				st.Uploaded.Load(), st.FoundPresent.Load(), st.KnownPrevious.Load(), st.Existing.Load(), res.Previous)
		}
	}
}
