package restore_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestRestoreGuestSharedCounted: a chunk the three disks all use counts
// once among the shared chunks, not once per extra disk; the zero chunk,
// which all three hold and which is never fetched, is not counted.
func TestRestoreGuestSharedCounted(t *testing.T) {
	chunk := func(seed uint64) []byte { return fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: cs}) }
	a, b, c := chunk(21), chunk(22), chunk(23)
	z := make([]byte, cs)
	imgs := [][]byte{slices.Concat(a, z, b), slices.Concat(a, z, c), slices.Concat(z, a)}
	dir := guestSnapshot(t, imgs)
	src, _ := countingReader(t, dir)
	var disks []restore.GuestDisk
	for i := range imgs {
		disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: &memSink{}})
	}
	g, err := restore.RestoreGuest(context.Background(), src, disks, restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	if g.SharedChunks != 1 || g.Stats.Fetched.Load() != 3 {
		t.Errorf("%d shared, %d fetched; want 1 shared (a), 3 fetched (a b c)", g.SharedChunks, g.Stats.Fetched.Load())
	}
}

// TestRestoreGuestSalvagesBadCopy: a chunk two disks share whose only
// copy is kept aside as damaged (<digest>.0.bad) and intact is recovered
// from it, as a restore of one archive does: the disks are byte-exact,
// nothing is damaged, and the run records the copy it used.
func TestRestoreGuestSalvagesBadCopy(t *testing.T) {
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	_, digests := fixture.Digests(t, fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "100", fixture.T0), guestArchives[1]))
	lost := digests[0] // b: the first and second disks'
	p := fixture.ChunkPath(dir, lost)
	if err := os.Rename(p, filepath.Join(filepath.Dir(p), chunkstore.BadName(lost, 0))); err != nil {
		t.Fatal(err)
	}
	keys, err := snapshot.NewKeys(context.Background(), snapshot.KeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := snapshot.Open(context.Background(), fixture.OpenStore(t, dir), nil, "vm/100", keys)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var disks []restore.GuestDisk
	for i := range imgs {
		disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: &filetarget.Sink{Path: filepath.Join(out, guestArchives[i]+".raw")}})
	}
	g, err := restore.RestoreGuest(context.Background(), src, disks, restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Err(); err != nil {
		t.Fatalf("a chunk intact in a .bad copy: %v", err)
	}
	for i, img := range imgs {
		g.Disks[i].Target.Close(false)
		fixture.Equal(t, filepath.Join(out, guestArchives[i]+".raw"), img)
	}
	if s := g.Stats.Salvaged.Chunks(); g.Stats.Salvaged.Count() != 1 || len(s) != 1 || s[0].Digest != lost.String() {
		t.Errorf("salvaged %v (%d), want chunk %s once", s, g.Stats.Salvaged.Count(), lost)
	}
}
