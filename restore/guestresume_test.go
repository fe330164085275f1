package restore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestRestoreGuestResumeOtherSnapshotSaysGuest: a guest --resume naming
// a newer snapshot than the one whose stopped restore left durable
// chunks is refused naming what continues it in restore-guest's words
// (restore-guest --resume SNAPSHOT), not restore's (SNAPSHOT ARCHIVE);
// and a guest refused for another cause (o.Refused) says nothing about
// starting from the beginning.
func TestRestoreGuestResumeOtherSnapshotSaysGuest(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 17)
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	putBack := stopOnLastChunk(t, dir, fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	out := t.TempDir()
	disks := []restore.GuestDisk{{Archive: "drive-scsi0.img.fidx", Sink: &filetarget.Sink{Path: filepath.Join(out, "drive-scsi0.img")}}}
	var notes []string
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Note: func(m string) { notes = append(notes, m) }}
	g, err := restore.RestoreGuest(ctx, src(t, dir, "vm/100"), disks, o)
	var se *restore.StoppedError
	if err != nil || !errors.As(g.Err(), &se) || se.Durable == 0 {
		t.Fatalf("stopped guest restore: %v, %v", err, g.Err())
	}
	putBack()

	// Refused for the caller's reason, with a disk that has nothing to
	// resume: no note says the restore starts.
	o.Resume = true
	other := []restore.GuestDisk{{Archive: "drive-scsi0.img.fidx", Sink: &filetarget.Sink{Path: filepath.Join(t.TempDir(), "drive-scsi0.img")}}}
	notes = nil
	_, err = restore.RestoreGuest(ctx, src(t, dir, "vm/100"), other, restore.RestoreOptions{Resume: true, KeepWork: true, Refused: restore.Unusable(errors.New("configuration refused")),
		Note: func(m string) { notes = append(notes, m) }})
	if err == nil || len(notes) != 0 {
		t.Errorf("refused guest: %v; notes %q, want none", err, notes)
	}

	img := fixture.WriteFile(t, t.TempDir(), "new.raw", fixture.Mixed(8*cs, 30))
	newer := fixture.Snap(t, "", "vm", "100", fixture.T0+3600)
	fixture.Backup(t, dir, newer, backup.Options{ChunkSize: cs}, backup.Source{Name: "drive-scsi0.img", Path: img})
	notes = nil
	_, err = restore.RestoreGuest(ctx, src(t, dir, "vm/100"), disks, o)
	wantRefused(t, newer.String(), err, []string{"restore-guest --resume " + snap.String() + " continues it", "--restart"}, []string{snap.String() + " drive-scsi0.img.fidx continues"})
	if len(notes) != 0 || strings.Contains(err.Error(), "starts from the beginning") {
		t.Errorf("notes %q", notes)
	}
}

// TestRestoreGuestResumedDistinct: a --resume of a guest every disk of
// which is complete counts the chunks it resumed once each, however many
// disks hold them (a and b are on two disks): six, as a run fetching
// them counts them, not the eight the disks' own counts add up to.
func TestRestoreGuestResumedDistinct(t *testing.T) {
	ctx := context.Background()
	imgs := guestImages()
	dir := guestSnapshot(t, imgs)
	out := t.TempDir()
	var disks []restore.GuestDisk
	for i := range imgs {
		disks = append(disks, restore.GuestDisk{Archive: guestArchives[i], Sink: &filetarget.Sink{Path: filepath.Join(out, guestArchives[i]+".raw")}})
	}
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Resume: true}
	for run := range 2 {
		src, _ := countingReader(t, dir)
		g, err := restore.RestoreGuest(ctx, src, disks, o)
		if err != nil || g.Err() != nil {
			t.Fatalf("run %d: %v, %v", run, err, g.Err())
		}
		sum := 0
		for _, r := range g.Disks {
			if r.Target != nil {
				r.Target.Close(false)
			}
			sum += r.Resumed
		}
		if run == 1 && (g.ResumedChunks != 6 || sum != 8) {
			t.Errorf("complete guest: %d chunks resumed (disks' own: %d), want 6 (8)", g.ResumedChunks, sum)
		}
		if run == 0 && g.ResumedChunks != 0 {
			t.Errorf("first run: %d chunks resumed", g.ResumedChunks)
		}
	}
}

// TestFailedInterruptedWords: a restore interrupted before anything was
// kept (a guest's disk that had not started) says so, without the
// "context canceled" of the cancellation, which it still wraps; another
// cause is named.
func TestFailedInterruptedWords(t *testing.T) {
	err := restore.Failed("drive-virtio0.img.fidx", "/o/drive-virtio0.img", false, fmt.Errorf("fetch: %w", context.Canceled))
	if msg := err.Error(); strings.Contains(msg, "canceled") || !strings.Contains(msg, "interrupted") || !strings.Contains(msg, "/o/drive-virtio0.img") {
		t.Errorf("interrupted: %q", msg)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the cancellation is lost: %v", err)
	}
	if err := restore.Failed("a.fidx", "/t", false, errors.New("store unreachable")); !strings.Contains(err.Error(), "failed, nothing was kept: store unreachable") {
		t.Errorf("store: %q", err)
	}
}
