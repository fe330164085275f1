package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// stopOnLastChunk removes the last chunk of snap's image from the store dir
// and returns a function that puts it back.
func stopOnLastChunk(t *testing.T, dir string, snapPath string) (restoreChunk func()) {
	t.Helper()
	_, digests := fixture.Digests(t, snapPath)
	chunk := fixture.ChunkPath(dir, digests[len(digests)-1])
	saved, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(chunk)
	return func() {
		t.Helper()
		if err := os.WriteFile(chunk, saved, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// journaled returns how many chunks the journal of target records.
func journaled(t *testing.T, target string) int {
	t.Helper()
	jpath, err := filetarget.JournalPath(target)
	if err != nil {
		t.Fatal(err)
	}
	_, done, err := restore.ReadJournal(jpath)
	if err != nil {
		t.Fatalf("journal of %s: %v", target, err)
	}
	return len(done)
}

// wantRefused fails the test unless err is a refusal saying every one of
// want and none of not.
func wantRefused(t *testing.T, what string, err error, want, not []string) {
	t.Helper()
	if !errors.Is(err, restore.ErrRefused) {
		t.Fatalf("%s: %v, want ErrRefused", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
	for _, w := range not {
		if strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q says %q", what, err, w)
		}
	}
}

// TestResumeForcedFile: a restore over an existing file (Force) that stops
// keeps its journal and says to continue with --resume --force; a rerun
// with Force but without Resume or Restart is refused naming both and
// changes nothing (before, it discarded the journal); a Resume without
// Force is refused naming --resume --force (before: "target exists"); the
// Resume with Force fetches only the rest.
func TestResumeForcedFile(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 13)
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	putBack := stopOnLastChunk(t, dir, fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	target := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Build(5, fixture.Region{Kind: fixture.Random, Len: 50 * cs}))
	forced := &filetarget.Sink{Path: target, Options: filetarget.Options{Force: true}}
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true}
	_, err := restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", forced, o)
	var se *restore.StoppedError
	if !errors.As(err, &se) || se.Durable == 0 || se.Partial != "" || !se.Force || !strings.Contains(err.Error(), "--resume --force") {
		t.Fatalf("stopped restore over an existing file: %v", err)
	}
	putBack()

	_, err = restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", forced, o)
	wantRefused(t, "rerun with --force", err, []string{"--resume", "--restart", "durable chunks"}, nil)
	if n := journaled(t, target); n != se.Durable {
		t.Fatalf("the refused rerun changed the journal: %d chunks, had %d", n, se.Durable)
	}
	o.Resume = true
	_, err = restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", &filetarget.Sink{Path: target}, o)
	wantRefused(t, "--resume without --force", err, []string{"--resume --force"}, nil)
	if n := journaled(t, target); n != se.Durable {
		t.Fatalf("the refused resume changed the journal: %d chunks, had %d", n, se.Durable)
	}
	res, err := restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", forced, o)
	if err != nil {
		t.Fatal(err)
	}
	res.Target.Close(false)
	if res.Resumed != se.Durable {
		t.Errorf("--resume --force resumed %d chunks, want %d", res.Resumed, se.Durable)
	}
	fixture.Equal(t, target, data)
}

// TestResumeOtherSnapshot: a Resume naming the latest snapshot of a group
// after a newer one appeared (of another size, or of the same size) is
// refused while the stopped restore of the older one left durable chunks,
// naming that snapshot and --restart, and changes nothing (before, a newer
// snapshot of another size silently discarded them, saying the partial
// output was "not of the image's size"; of the same size, the refusal said
// to run without --resume, which is refused too). Naming the older
// snapshot continues it.
func TestResumeOtherSnapshot(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 17)
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	putBack := stopOnLastChunk(t, dir, fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	target := filepath.Join(t.TempDir(), "disk.raw")
	sink := &filetarget.Sink{Path: target}
	var notes []string
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Note: func(m string) { notes = append(notes, m) }}
	_, err := restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", sink, o)
	var se *restore.StoppedError
	if !errors.As(err, &se) || se.Durable == 0 {
		t.Fatalf("stopped restore: %v", err)
	}
	putBack()
	o.Resume = true
	for i, size := range []int64{8 * cs, int64(len(data))} {
		img := fixture.WriteFile(t, t.TempDir(), "new.raw", fixture.Mixed(size, uint64(30+i)))
		newer := fixture.Snap(t, "", "vm", "100", fixture.T0+int64(i+1)*3600)
		fixture.Backup(t, dir, newer, backup.Options{ChunkSize: cs}, backup.Source{Name: "drive-scsi0.img", Path: img})
		notes = nil
		_, err = restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", sink, o)
		wantRefused(t, newer.String(), err, []string{"--resume " + snap.String(), "--restart", newer.String()}, []string{"without --resume to start over"})
		if len(notes) != 0 {
			t.Errorf("%s: notes %q", newer, notes)
		}
		if n := journaled(t, target); n != se.Durable {
			t.Fatalf("%s: the refused resume changed the journal: %d chunks, had %d", newer, n, se.Durable)
		}
		if st, err := os.Stat(se.Partial); err != nil || st.Size() != int64(len(data)) {
			t.Fatalf("%s: the refused resume changed the partial output: %v", newer, err)
		}
	}
	res, err := restore.Restore(ctx, src(t, dir, snap.String()), "drive-scsi0.img.fidx", sink, o)
	if err != nil {
		t.Fatal(err)
	}
	res.Target.Close(false)
	if res.Resumed != se.Durable {
		t.Errorf("resume of %s resumed %d chunks, want %d", snap, res.Resumed, se.Durable)
	}
	fixture.Equal(t, target, data)
}

// src opens the snapshot ref of the store dir, without a key.
func src(t *testing.T, dir, ref string) *snapshot.Reader {
	t.Helper()
	return openReader(t, dir, ref, nil)
}

// TestResumeCompleteChangedKeepsMtime: a file a Resume completed, changed
// since (64 KiB rewritten) with its modification time set back, is not
// taken as complete by the next Resume: the completion record's change
// time differs, so the file is read back and the resume refused naming the
// chunk that differs. Before, the record (device, inode, size, mtime)
// vouched for it: "complete, nothing to do".
func TestResumeCompleteChangedKeepsMtime(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 19)
	dir, _ := restoretest.SnapshotOf(t, data, nil)
	target := filepath.Join(t.TempDir(), "disk.raw")
	sink := &filetarget.Sink{Path: target}
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Resume: true}
	res, err := restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", sink, o)
	if err != nil {
		t.Fatal(err)
	}
	res.Target.Close(false)
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a change time of its own, on a coarse clock too
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(fixture.Build(6, fixture.Region{Kind: fixture.Random, Len: cs}), 3*cs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(target, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	res, err = restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", sink, o)
	if err == nil && res.Complete != "" {
		t.Fatalf("a changed file with its mtime set back is taken as complete: %s", res.Complete)
	}
	wantRefused(t, "changed file", err, []string{"1 of", "differ", "--force"}, nil)
}
