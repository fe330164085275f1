package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestRestoreGuestRefusalsTogether: the refusals of every target are
// said in one error, before any chunk is read; a target that would be
// written over (Force) is not touched while another is refused.
func TestRestoreGuestRefusalsTogether(t *testing.T) {
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	src, store := countingReader(t, dir)
	out := t.TempDir()
	names := []string{"disk0.raw", "disk1.raw", "disk2.raw"}
	for _, n := range names {
		fixture.WriteFile(t, out, n, []byte("keep me"))
	}
	var disks []restore.GuestDisk
	for i := range imgs {
		// The first is written over (Force), the other two are refused.
		sink := &filetarget.Sink{Path: filepath.Join(out, names[i]), Options: filetarget.Options{Force: i == 0}}
		disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: sink})
	}
	g, err := restore.RestoreGuest(context.Background(), src, disks, restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true})
	if err == nil || g != nil || !errors.Is(err, restore.ErrTargetExists) || !strings.Contains(err.Error(), names[1]) || !strings.Contains(err.Error(), names[2]) {
		t.Fatalf("guest with two existing targets: %v (result %v), want ErrTargetExists naming both", err, g)
	}
	for _, n := range names {
		fixture.Equal(t, filepath.Join(out, n), []byte("keep me"))
	}
	if ents, _ := os.ReadDir(out); len(ents) != len(names) {
		t.Errorf("the refused guest left %d entries in the target directory", len(ents))
	}
	if n := len(store.Counts()); n != 0 {
		t.Errorf("%d chunks read before the refusal", n)
	}
}
