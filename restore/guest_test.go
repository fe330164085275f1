package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// guestImages are three disks: the first two share two chunks (a, b),
// each has a chunk of its own, the first and third zero chunks; the
// third has a short last chunk.
func guestImages() [][]byte {
	chunk := func(seed uint64) []byte { return fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: cs}) }
	a, b, c, d, e, f := chunk(1), chunk(2), chunk(3), chunk(4), chunk(5), chunk(6)
	z := make([]byte, cs)
	return [][]byte{
		slices.Concat(a, b, c, z, a),
		slices.Concat(b, d, a),
		slices.Concat(e, z, f[:999]),
	}
}

var guestArchives = []string{"drive-scsi0.img.fidx", "drive-scsi1.img.fidx", "drive-virtio0.img.fidx"}

// guestSnapshot backs the images up as vm/100 with a config and returns
// the store directory.
func guestSnapshot(t *testing.T, imgs [][]byte) string {
	t.Helper()
	dir := fixture.NewStore(t)
	src := t.TempDir()
	var sources []backup.Source
	for i, img := range imgs {
		name := guestArchives[i][:len(guestArchives[i])-len(".fidx")]
		sources = append(sources, backup.Source{Name: name, Path: fixture.WriteFile(t, src, name, img)})
	}
	sources = append(sources, backup.Source{Name: "qemu-server.conf", Path: fixture.WriteFile(t, src, "qemu-server.conf", []byte("cores: 2\n"))})
	fixture.Backup(t, dir, fixture.Snap(t, "", "vm", "100", fixture.T0), backup.Options{ChunkSize: cs}, sources...)
	return dir
}

// countingReader opens vm/100 of dir through a store that counts chunk
// reads.
func countingReader(t *testing.T, dir string) (*snapshot.Reader, *fixture.CountingStore) {
	t.Helper()
	keys, err := snapshot.NewKeys(context.Background(), snapshot.KeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := fixture.NewCountingStore(fixture.OpenStore(t, dir))
	r, err := snapshot.Open(context.Background(), store, nil, "vm/100", keys)
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

// TestRestoreGuestFetchesOnce: three disks restored in one run are
// byte-exact; every chunk is read from the store once, those two disks
// share included, and the zero chunk never; each disk reports its own
// bytes written.
func TestRestoreGuestFetchesOnce(t *testing.T) {
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	for _, writers := range []int{0, 2} {
		src, store := countingReader(t, dir)
		sinks := make([]*memSink, len(imgs))
		var disks []restore.GuestDisk
		for i := range imgs {
			sinks[i] = &memSink{}
			disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: sinks[i]})
		}
		g, err := restore.RestoreGuest(context.Background(), src, disks, restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2, Writers: writers}})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		for i, img := range imgs {
			fixture.EqualBytes(t, guestArchives[i], sinks[i].t.bytes(), img)
			if !sinks[i].t.synced {
				t.Errorf("%s not synced", guestArchives[i])
			}
			zero := uint64(0)
			if i != 1 {
				zero = cs
			}
			if got := g.Disks[i].Stats.DataBytes.Load(); got != uint64(len(img))-zero {
				t.Errorf("%s: %d data bytes written, want %d", guestArchives[i], got, uint64(len(img))-zero)
			}
		}
		// a b c d e f: six chunks, each read once.
		for d, n := range store.Counts() {
			if n != 1 {
				t.Errorf("chunk %s read %d times", d, n)
			}
		}
		if n := len(store.Counts()); n != 6 || g.Stats.Fetched.Load() != 6 || g.SharedChunks != 2 {
			t.Errorf("%d chunks read, %d fetched, %d shared; want 6, 6, 2", n, g.Stats.Fetched.Load(), g.SharedChunks)
		}
	}
}

// TestRestoreGuestRefusedTouchesNothing: when one disk's target is refused
// (the last: an existing file, no Force), no target is created or
// changed and no chunk is read.
func TestRestoreGuestRefusedTouchesNothing(t *testing.T) {
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	src, store := countingReader(t, dir)
	out := t.TempDir()
	existing := fixture.WriteFile(t, out, "disk2.raw", []byte("keep me"))
	var disks []restore.GuestDisk
	for i := range imgs {
		p := filepath.Join(out, []string{"disk0.raw", "disk1.raw", "disk2.raw"}[i])
		disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: &filetarget.Sink{Path: p}})
	}
	g, err := restore.RestoreGuest(context.Background(), src, disks, restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true})
	if err == nil || g != nil || !errors.Is(err, restore.ErrTargetExists) {
		t.Fatalf("guest with an existing target: %v (result %v), want ErrTargetExists", err, g)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the refused guest left %v in the target directory", names)
	}
	fixture.Equal(t, existing, []byte("keep me"))
	if n := len(store.Counts()); n != 0 {
		t.Errorf("%d chunks read before the refusal", n)
	}
}

// TestRestoreGuestResume: a guest restore stopped by a missing chunk of
// one disk keeps every disk's journal; the resume, with the chunk back,
// reads that chunk alone and leaves the three disks byte-exact.
func TestRestoreGuestResume(t *testing.T) {
	ctx := context.Background()
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	_, digests := fixture.Digests(t, fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "100", fixture.T0), guestArchives[2]))
	lost := digests[len(digests)-1] // the third disk's short last chunk
	chunk := fixture.ChunkPath(dir, lost)
	saved, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(chunk)
	out := t.TempDir()
	disks := func() []restore.GuestDisk {
		var ds []restore.GuestDisk
		for i := range imgs {
			ds = append(ds, restore.GuestDisk{Archive: guestArchives[i], Sink: &filetarget.Sink{Path: filepath.Join(out, guestArchives[i]+".raw")}})
		}
		return ds
	}
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true}
	src, _ := countingReader(t, dir)
	g, err := restore.RestoreGuest(ctx, src, disks(), o)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range g.Errs {
		var se *restore.StoppedError
		if !errors.As(e, &se) || se.Durable == 0 {
			t.Errorf("%s: %v, want a stopped restore with durable chunks", guestArchives[i], e)
		}
	}
	var de *restore.DamagedError
	if !errors.As(g.Errs[2], &de) || len(de.Chunks) != 1 || de.Chunks[0].Digest != lost || de.Chunks[0].Offsets[0] != 2*cs {
		t.Errorf("third disk's error %v does not name chunk %s at its own offset %d", g.Errs[2], lost, 2*cs)
	}
	if err := os.WriteFile(chunk, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	src, store := countingReader(t, dir)
	g, err = restore.RestoreGuest(ctx, src, disks(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	for i, img := range imgs {
		g.Disks[i].Target.Close(false)
		fixture.Equal(t, filepath.Join(out, guestArchives[i]+".raw"), img)
	}
	if got := store.Counts(); len(got) != 1 || got[lost] != 1 {
		t.Errorf("resume read %v, want chunk %s once", got, lost)
	}
}
