package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// memSink opens a memTarget: a target kind with none of the optional
// capabilities (no journal, no commit, no file to read back).
type memSink struct{ t *memTarget }

func (s *memSink) String() string { return "memory" }
func (s *memSink) Open(ctx context.Context, req restore.SinkRequest) (restore.Target, error) {
	s.t = newMemTarget(int(req.Size))
	if err := req.Locked(); err != nil {
		return nil, err
	}
	return s.t, nil
}

// openReader opens the snapshot of dir with key cc (nil: none).
func openReader(t *testing.T, dir, ref string, cc *crypto.Config) *snapshot.Reader {
	t.Helper()
	o := snapshot.KeyOptions{}
	if cc != nil {
		o.File = "key"
		o.Open = func(context.Context, string) (*crypto.Config, error) { return cc, nil }
	}
	keys, err := snapshot.NewKeys(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(context.Background(), fixture.OpenStore(t, dir), nil, ref, keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRestoreEntry: Restore plans the archive through the snapshot reader,
// writes a new file and commits it; a drill reads it back through the
// ReadBacker capability; a target kind without the file capabilities
// restores through the same call; --resume without a journal is refused;
// a damaged chunk leaves nothing behind for a new file.
func TestRestoreEntry(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 7)
	_, cc := fixture.Key(t, 3)
	dir, snap := restoretest.SnapshotOf(t, data, cc)
	src := openReader(t, dir, "vm/100", cc)

	target := filepath.Join(t.TempDir(), "disk.raw")
	var progressed int64
	res, err := restore.Restore(ctx, src, "drive-scsi0.img.fidx", &filetarget.Sink{Path: target}, restore.RestoreOptions{
		Pipeline: restore.Options{Jobs: 2}, KeepWork: true,
		Progress: func(total int64, done func() int64) func() { return func() { progressed = done() } },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Key != cc || res.Stats.Fetched.Load() == 0 || progressed != int64(res.Stats.DataBytes.Load()) || res.Damage != nil {
		t.Errorf("result: key %p, fetched %d, progress %d of %d, damage %v", res.Key, res.Stats.Fetched.Load(), progressed, res.Stats.DataBytes.Load(), res.Damage)
	}
	var rb restore.ReadBackStats
	if err := restore.ReadBackTarget(ctx, res.Target, target, res.Plan, res.Key, 2, &rb); err != nil {
		t.Errorf("read back: %v", err)
	}
	res.Target.Close(false)
	fixture.Equal(t, target, data)
	if _, err := os.Stat(filetarget.PartialPath(target)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial output left: %v", err)
	}

	// A second target kind: nothing but WriteAt, Zero, Sync and Close.
	ms := &memSink{}
	if _, err := restore.Restore(ctx, src, "drive-scsi0.img", ms, restore.RestoreOptions{}); err == nil {
		t.Errorf("archive name without .fidx accepted")
	}
	if _, err := restore.Restore(ctx, src, "drive-scsi0.img.fidx", ms, restore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.EqualBytes(t, "memory target", ms.t.bytes(), data)
	var notes []string
	note := func(msg string) { notes = append(notes, msg) }
	if _, err := restore.Restore(ctx, src, "drive-scsi0.img.fidx", ms, restore.RestoreOptions{Resume: true, Note: note}); err != nil ||
		len(notes) != 1 || !strings.Contains(notes[0], "nothing to resume (the target keeps no journal)") {
		t.Errorf("resume into a target without a journal: %v, notes %q", err, notes)
	}

	// Resume with no interrupted restore to continue: the restore starts.
	other := filepath.Join(t.TempDir(), "other.raw")
	notes = nil
	res, err = restore.Restore(ctx, src, "drive-scsi0.img.fidx", &filetarget.Sink{Path: other}, restore.RestoreOptions{Resume: true, Note: note})
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "nothing to resume (no journal ") {
		t.Fatalf("resume without a journal: %v, notes %q", err, notes)
	}
	res.Target.Close(false)
	fixture.Equal(t, other, data)
	os.Remove(other)

	// A damaged chunk fails the restore of a new file: nothing is kept.
	_, digests := fixture.Digests(t, fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	fixture.FlipByte(t, fixture.ChunkPath(dir, digests[3]), -1)
	_, err = restore.Restore(ctx, src, "drive-scsi0.img.fidx", &filetarget.Sink{Path: other}, restore.RestoreOptions{})
	if err == nil || !strings.Contains(err.Error(), "nothing was kept") {
		t.Errorf("damaged chunk: %v", err)
	}
	if _, serr := os.Stat(other); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("failed restore left %s: %v", other, serr)
	}
}

// TestRestoreKeepWork: under KeepWork a restore that stops on a missing
// chunk keeps its partial output and journal (*StoppedError); a rerun
// without Resume is refused (ErrRefused) and Restart starts over; Resume
// fetches only the rest and leaves a completion record, so that the next
// Resume finds the target complete and writes nothing. Without KeepWork
// (a drill) the same stop keeps nothing.
func TestRestoreKeepWork(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 11)
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	src := openReader(t, dir, "vm/100", nil)
	_, digests := fixture.Digests(t, fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	chunk := fixture.ChunkPath(dir, digests[len(digests)-1])
	saved, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(chunk)

	target := filepath.Join(t.TempDir(), "disk.raw")
	sink := &filetarget.Sink{Path: target}
	var notes []string
	o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Note: func(m string) { notes = append(notes, m) }}
	_, err = restore.Restore(ctx, src, "drive-scsi0.img.fidx", sink, o)
	var se *restore.StoppedError
	if !errors.As(err, &se) || se.Durable == 0 || se.Partial != filetarget.PartialPath(target) {
		t.Fatalf("stopped restore: %v", err)
	}
	if _, err := os.Stat(se.Partial); err != nil {
		t.Fatalf("partial output not kept: %v", err)
	}
	if _, err := restore.Restore(ctx, src, "drive-scsi0.img.fidx", sink, o); !errors.Is(err, restore.ErrRefused) {
		t.Fatalf("rerun over a stopped restore: %v, want ErrRefused", err)
	}

	if err := os.WriteFile(chunk, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	res, err := restore.Restore(ctx, src, "drive-scsi0.img.fidx", sink, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != se.Durable || res.Created != true || res.ZeroRanges != "holes" {
		t.Errorf("resume: resumed %d of %d durable, created %v, zero ranges %q", res.Resumed, se.Durable, res.Created, res.ZeroRanges)
	}
	res.Target.Close(false)
	fixture.Equal(t, target, data)
	res, err = restore.Restore(ctx, src, "drive-scsi0.img.fidx", sink, o)
	if err != nil || res.Complete == "" || res.Target != nil {
		t.Fatalf("resume of a completed restore: %v, %+v", err, res)
	}

	// A drill's rules: the same stop keeps nothing.
	os.Remove(chunk)
	other := filepath.Join(t.TempDir(), "drill.raw")
	_, err = restore.Restore(ctx, src, "drive-scsi0.img.fidx", &filetarget.Sink{Path: other}, restore.RestoreOptions{})
	if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "nothing was kept") {
		t.Errorf("drill stop: %v", err)
	}
	if _, err := os.Stat(filetarget.PartialPath(other)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drill left its partial output: %v", err)
	}
}
