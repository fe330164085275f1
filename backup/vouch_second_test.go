package backup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// secondStamps is a directory store that stamps as a bucket does, in
// whole seconds (ModTimeResolution), with the times it is given: the
// manifest's, the one chunk's (target) and every other chunk's.
type secondStamps struct {
	*chunkstore.Local
	target                 crypto.Digest
	manifest, chunk, other time.Time
}

func (s *secondStamps) ModTimeResolution() time.Duration { return time.Second }

func (s *secondStamps) FileModTime(ctx context.Context, rel string) (time.Time, error) {
	if strings.HasSuffix(rel, "/index.json.blob") {
		return s.manifest, nil
	}
	return s.Local.FileModTime(ctx, rel)
}

func (s *secondStamps) ChunkModTime(ctx context.Context, d crypto.Digest) (int64, time.Time, error) {
	size, _, err := s.Local.ChunkModTime(ctx, d)
	if d == s.target {
		return size, s.chunk, err
	}
	return size, s.other, err
}

// TestBackupVouchesBySecond: on a store stamping whole seconds, the next
// backup counts on a chunk of the previous snapshot only when its second is
// earlier than its manifest's; a chunk stamped in the manifest's second
// (written, or rewritten, in the second the manifest was written in,
// whatever the fraction says) is read back and checked instead.
func TestBackupVouchesBySecond(t *testing.T) {
	const cs = 64 << 10
	const withData = 8
	data := fixture.Build(19, fixture.Region{Kind: fixture.Random, Len: 4 * cs}, fixture.Region{Kind: fixture.Text, Len: 4 * cs})
	sec := time.Date(2026, 11, 29, 10, 0, 7, 0, time.UTC)
	for _, c := range []struct {
		name            string
		chunk, manifest time.Time
		known, found    uint64
	}{
		{"second-before", sec.Add(-100 * time.Millisecond), sec, withData, 0},
		{"same-second", sec, sec, withData - 1, 1},
		{"same-second-earlier-fraction", sec.Add(100 * time.Millisecond), sec.Add(900 * time.Millisecond), withData - 1, 1},
		{"second-after", sec.Add(time.Second), sec, withData - 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			src := backup.Source{Name: "drive-scsi0.img", Path: fixture.WriteFile(t, t.TempDir(), "d.raw", data)}
			opts := backup.Options{ChunkSize: cs, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0)}
			if _, st, err := run(t, dir, opts, src); err != nil || st.Uploaded.Load() != withData {
				t.Fatalf("first backup: %v, %d uploaded", err, st.Uploaded.Load())
			}
			l := fixture.OpenStore(t, dir)
			var nokey *crypto.Config
			s := &secondStamps{Local: l, target: nokey.ChunkDigest(data[2*cs : 3*cs]),
				manifest: c.manifest, chunk: c.chunk, other: sec.Add(-2 * time.Second)}
			opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+60)
			var st backup.Stats
			if _, err := backup.Run(context.Background(), s, []backup.Source{src}, opts, &st); err != nil {
				t.Fatal(err)
			}
			if st.KnownPrevious.Load() != c.known || st.FoundPresent.Load() != c.found || st.Uploaded.Load() != 0 {
				t.Errorf("known %d, found %d, uploaded %d; want %d, %d, 0",
					st.KnownPrevious.Load(), st.FoundPresent.Load(), st.Uploaded.Load(), c.known, c.found)
			}
		})
	}
}
