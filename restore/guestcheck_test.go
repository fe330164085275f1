package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestRestoreGuestRefusedResumeKeepsJournals: a --resume with two disks'
// targets swapped — one target's journal (of the other disk) empty, the
// other's with durable chunks — is refused, and neither journal is
// removed or changed: journals change only once every target passed.
func TestRestoreGuestRefusedResumeKeepsJournals(t *testing.T) {
	ctx := context.Background()
	imgs := guestImages()[:2]
	dir := guestSnapshot(t, guestImages())
	out := t.TempDir()
	targets := []string{filepath.Join(out, "a.raw"), filepath.Join(out, "b.raw")}
	disks := func(swap bool) []restore.GuestDisk {
		var ds []restore.GuestDisk
		for i := range imgs {
			p := targets[i]
			if swap {
				p = targets[1-i]
			}
			ds = append(ds, restore.GuestDisk{Archive: guestArchives[i], Sink: &filetarget.Sink{Path: p}})
		}
		return ds
	}
	// A guest restore stopped by a chunk of the second disk missing:
	// both disks keep a journal with durable chunks.
	_, digests := fixture.Digests(t, fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "100", fixture.T0), guestArchives[1]))
	chunk := fixture.ChunkPath(dir, digests[1])
	saved, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(chunk)
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 1}, KeepWork: true}
	src, _ := countingReader(t, dir)
	if _, err := restore.RestoreGuest(ctx, src, disks(false), o); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chunk, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	var jpaths []string
	for _, p := range targets {
		jp, err := (&filetarget.Sink{Path: p}).JournalPath()
		if err != nil {
			t.Fatal(err)
		}
		jpaths = append(jpaths, jp)
	}
	// b.raw's journal (of the second disk) made empty: no durable chunk.
	h, _, err := restore.ReadJournal(jpaths[1])
	if err != nil {
		t.Fatal(err)
	}
	j, err := restore.CreateJournal(jpaths[1], h)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if _, done, err := restore.ReadJournal(jpaths[0]); err != nil || len(done) == 0 {
		t.Fatalf("a.raw's journal: %d durable chunks, %v", len(done), err)
	}
	var before [][]byte
	for _, jp := range jpaths {
		b, err := os.ReadFile(jp)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, b)
	}
	o.Resume = true
	src, _ = countingReader(t, dir)
	g, err := restore.RestoreGuest(ctx, src, disks(true), o)
	if err == nil || g != nil || !errors.Is(err, restore.ErrRefused) {
		t.Fatalf("swapped --resume: %v (result %v), want a refusal", err, g)
	}
	for i, jp := range jpaths {
		b, err := os.ReadFile(jp)
		if err != nil || string(b) != string(before[i]) {
			t.Errorf("journal %s changed by the refused resume: %v", jp, err)
		}
	}
}

// TestRestoreGuestOtherDiskStopped: a chunk of the third disk missing
// stops the guest's run; the first two disks, whose chunks were all
// written, stop with a GuestStopError naming the third disk, their
// errors never naming its chunk (nor a whole-guest offset), and keep
// their journals; the third disk's error names the chunk at its own
// offset.
func TestRestoreGuestOtherDiskStopped(t *testing.T) {
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	_, digests := fixture.Digests(t, fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "100", fixture.T0), guestArchives[2]))
	lost := digests[len(digests)-1]
	os.Remove(fixture.ChunkPath(dir, lost))
	out := t.TempDir()
	var disks []restore.GuestDisk
	for i := range imgs {
		disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: &filetarget.Sink{Path: filepath.Join(out, guestArchives[i]+".raw")}})
	}
	src, _ := countingReader(t, dir)
	g, err := restore.RestoreGuest(context.Background(), src, disks, restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var gs *restore.GuestStopError
		var se *restore.StoppedError
		e := g.Errs[i]
		if !errors.As(e, &gs) || len(gs.Disks) != 1 || gs.Disks[0] != guestArchives[2] || !errors.As(e, &se) || se.Durable != se.Total {
			t.Errorf("%s: %v, want stopped with %s, every chunk durable", guestArchives[i], e, guestArchives[2])
		}
		if e != nil && strings.Contains(e.Error(), lost.String()) {
			t.Errorf("%s's error names the other disk's chunk: %v", guestArchives[i], e)
		}
		if p := g.Partial[i]; p == nil || p.Plan.Size != uint64(len(imgs[i])) || p.Stats.DataBytes.Load() == 0 {
			t.Errorf("%s: partial result %+v, want its size and bytes written", guestArchives[i], p)
		}
	}
	var de *restore.DamagedError
	if !errors.As(g.Errs[2], &de) || len(de.Chunks) != 1 || de.Chunks[0].Offsets[0] != 2*cs {
		t.Errorf("third disk's error %v does not name chunk %s at its own offset %d", g.Errs[2], lost, 2*cs)
	}
}
