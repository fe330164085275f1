package backup_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBackupReplacesDamagedChunk: a chunk already in the store that is
// damaged (a flipped bit keeps its size, a truncated one does not) is not
// counted "already there": the backup keeps it aside as <digest>.0.bad,
// writes it again and says so; the stored chunk then decodes to the data.
// A good stored chunk is counted as existing.
func TestBackupReplacesDamagedChunk(t *testing.T) {
	const cs = 64 << 10
	_, key := fixture.Key(t, 5)
	for _, c := range []struct {
		name   string
		key    *crypto.Config
		damage func(t *testing.T, p string)
	}{
		{"bit-flip", nil, func(t *testing.T, p string) { fixture.FlipByte(t, p, -1) }},
		{"bit-flip-encrypted", key, func(t *testing.T, p string) { fixture.FlipByte(t, p, -1) }},
		{"truncated", nil, func(t *testing.T, p string) { os.Truncate(p, 100) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			data := fixture.Build(7, fixture.Region{Kind: fixture.Random, Len: cs})
			img := fixture.WriteFile(t, t.TempDir(), "d.raw", data)
			src := backup.Source{Name: "drive-scsi0.img", Path: img}
			opts := backup.Options{ChunkSize: cs, Key: c.key, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0)}
			if _, _, err := run(t, dir, opts, src); err != nil {
				t.Fatal(err)
			}
			d := c.key.ChunkDigest(data)
			p := fixture.ChunkPath(dir, d)
			c.damage(t, p)
			damaged, _ := os.ReadFile(p)
			opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+60)
			res, st, err := run(t, dir, opts, src)
			if err != nil {
				t.Fatal(err)
			}
			if st.Replaced.Load() != 1 || st.Existing.Load() != 0 || st.Uploaded.Load() != 1 || len(res.Replaced) != 1 || res.Replaced[0].Digest != d || res.Replaced[0].Aside != p+".0.bad" {
				t.Errorf("replaced %d, existing %d, uploaded %d, %+v; want the chunk replaced, its damaged copy at %s.0.bad",
					st.Replaced.Load(), st.Existing.Load(), st.Uploaded.Load(), res.Replaced, p)
			}
			if aside, err := os.ReadFile(p + ".0.bad"); err != nil || !bytes.Equal(aside, damaged) {
				t.Errorf("damaged copy: %v", err)
			}
			stored, err := os.ReadFile(p)
			if err == nil {
				dec, _ := chunkstore.NewDecoder()
				_, err = dec.DecodeChunk(nil, stored, d, len(data), c.key != nil, c.key)
			}
			if err != nil {
				t.Errorf("stored chunk after the backup: %v", err)
			}
			// Good now: the next backup counts it as there.
			opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+120)
			if _, st, err = run(t, dir, opts, src); err != nil || st.Existing.Load() != 1 || st.Replaced.Load() != 0 {
				t.Errorf("backup over the good chunk: %v, existing %d, replaced %d", err, st.Existing.Load(), st.Replaced.Load())
			}
		})
	}
}

// noReplace is a directory store that cannot replace chunks (it still
// tells when a chunk was written, as a directory does).
type noReplace struct {
	chunkstore.WriteStore
	chunkstore.ModTimer
}

// TestBackupDamagedChunkNoReplace: a store that cannot replace a damaged
// chunk fails the backup (no snapshot that cannot be restored).
func TestBackupDamagedChunkNoReplace(t *testing.T) {
	const cs = 64 << 10
	dir := fixture.NewStore(t)
	data := fixture.Build(8, fixture.Region{Kind: fixture.Random, Len: cs})
	src := backup.Source{Name: "drive-scsi0.img", Path: fixture.WriteFile(t, t.TempDir(), "d.raw", data)}
	opts := backup.Options{ChunkSize: cs, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0)}
	if _, _, err := run(t, dir, opts, src); err != nil {
		t.Fatal(err)
	}
	var nokey *crypto.Config
	fixture.FlipByte(t, fixture.ChunkPath(dir, nokey.ChunkDigest(data)), -1)
	s := fixture.OpenStore(t, dir)
	opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+60)
	if _, err := backup.Run(context.Background(), noReplace{s, s}, []backup.Source{src}, opts, nil); !errors.Is(err, backup.ErrCannotReplace) {
		t.Errorf("backup over a damaged chunk it cannot replace: %v, want ErrCannotReplace", err)
	}
}
