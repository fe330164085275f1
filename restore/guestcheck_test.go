package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
