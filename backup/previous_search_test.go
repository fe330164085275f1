package backup_test

import (
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBackupPreviousSearchesBack: a backup counts on the newest snapshot of
// its group with its crypt mode and key, even when a newer one of another
// crypt mode or key lies in between (plain, encrypted, plain: the third
// counts on the first; encrypted with key A, key B, A: the third counts
// on the first).
func TestBackupPreviousSearchesBack(t *testing.T) {
	const cs = 64 << 10
	_, keyA := fixture.Key(t, 23)
	_, keyB := fixture.Key(t, 24)
	data := fixture.Build(19, fixture.Region{Kind: fixture.Random, Len: 4 * cs})
	for _, c := range []struct {
		name string
		keys [3]*crypto.Config
	}{
		{"plain-encrypted-plain", [3]*crypto.Config{nil, keyA, nil}},
		{"keyA-keyB-keyA", [3]*crypto.Config{keyA, keyB, keyA}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			src := backup.Source{Name: "drive-scsi0.img", Path: fixture.WriteFile(t, t.TempDir(), "d.raw", data)}
			var res *backup.Result
			var st *backup.Stats
			for i, k := range c.keys {
				opts := backup.Options{ChunkSize: cs, Key: k, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0+int64(60*i))}
				var err error
				if res, st, err = run(t, dir, opts, src); err != nil {
					t.Fatalf("backup %d: %v", i, err)
				}
			}
			first := fixture.Snap(t, "", "vm", "100", fixture.T0).String()
			if res.Previous != first || st.KnownPrevious.Load() != 4 || st.Uploaded.Load() != 0 {
				t.Errorf("third backup: previous %q, %d known from it, %d uploaded; want %q, 4, 0", res.Previous, st.KnownPrevious.Load(), st.Uploaded.Load(), first)
			}
		})
	}
}
