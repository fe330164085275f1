package backup_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBackupDamagedChunkNoFreeBadName: a damaged chunk in the store whose
// .0.bad to .9.bad names are all taken fails the backup
// (chunkstore.ErrNoFreeBadName): no .bad copy is overwritten, and the
// snapshot is not written over a chunk that cannot be replaced.
func TestBackupDamagedChunkNoFreeBadName(t *testing.T) {
	const cs = 64 << 10
	dir := fixture.NewStore(t)
	data := fixture.Build(9, fixture.Region{Kind: fixture.Random, Len: cs})
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", data)
	src := backup.Source{Name: "drive-scsi0.img", Path: img}
	opts := backup.Options{ChunkSize: cs, Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0)}
	if _, _, err := run(t, dir, opts, src); err != nil {
		t.Fatal(err)
	}
	var nokey = opts.Key
	d := nokey.ChunkDigest(data)
	p := fixture.ChunkPath(dir, d)
	fixture.FlipByte(t, p, -1)
	badPath := func(n int) string { return filepath.Join(filepath.Dir(p), chunkstore.BadName(d, n)) }
	for n := range chunkstore.MaxBadGenerations {
		if err := os.WriteFile(badPath(n), []byte(fmt.Sprintf("copy %d", n)), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	opts.Snapshot = fixture.Snap(t, "", "vm", "100", fixture.T0+60)
	if _, _, err := run(t, dir, opts, src); !errors.Is(err, chunkstore.ErrNoFreeBadName) {
		t.Fatalf("backup: %v; want ErrNoFreeBadName", err)
	}
	for n := range chunkstore.MaxBadGenerations {
		if got, err := os.ReadFile(badPath(n)); err != nil || string(got) != fmt.Sprintf("copy %d", n) {
			t.Errorf("%s: %q, %v; want it left as it was", badPath(n), got, err)
		}
	}
}
