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
)

// TestJournal: a journal records a chunk only once flushed (the target
// synced first), reads back its header and chunks, ignores a torn last
// line, and refuses a resume of something else; CheckDurable trusts the
// target's bytes, not the journal.
func TestJournal(t *testing.T) {
	img := fixture.Mixed(5*cs, 17)
	dir, snap := restoretest.SnapshotOf(t, img, nil)
	plan, _ := restoretest.LoadPlan(t, fixture.OpenStore(t, dir), snap, nil)
	h := restore.JournalHeader{Snapshot: snap.String(), Archive: "drive-scsi0.img.fidx", IndexCsum: "00ff", Size: uint64(len(img))}
	path := filepath.Join(t.TempDir(), "j", "out.raw.journal")

	j, err := restore.CreateJournal(path, h)
	if err != nil {
		t.Fatal(err)
	}
	tgt := newMemTarget(len(img))
	j.Add(plan.Chunks[0].Digest)
	j.Add(plan.Chunks[1].Digest)
	if _, done, err := restore.ReadJournal(path); err != nil || len(done) != 0 {
		t.Fatalf("before Flush: %d chunks recorded, %v; want none", len(done), err)
	}
	if err := j.Flush(tgt); err != nil {
		t.Fatal(err)
	}
	if !tgt.synced {
		t.Error("Flush recorded chunks without syncing the target")
	}
	j.Add(plan.Chunks[2].Digest)
	if err := j.Flush(tgt); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash while appending leaves a torn last line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(plan.Chunks[3].Digest.String()[:20])
	f.Close()
	got, done, err := restore.ReadJournal(path)
	if err != nil || got != h || len(done) != 3 || !done[plan.Chunks[0].Digest] || !done[plan.Chunks[2].Digest] || done[plan.Chunks[3].Digest] {
		t.Fatalf("read back %+v, %d chunks, %v; want the header and chunks 0-2", got, len(done), err)
	}

	for _, c := range []struct {
		name   string
		change func(h *restore.JournalHeader)
	}{
		{"snapshot", func(h *restore.JournalHeader) { h.Snapshot = "vm/101/2026-01-01T00:00:00Z" }},
		{"archive", func(h *restore.JournalHeader) { h.Archive = "drive-scsi1.img.fidx" }},
		{"index", func(h *restore.JournalHeader) { h.IndexCsum = "ff00" }},
		{"size", func(h *restore.JournalHeader) { h.Size++ }},
	} {
		other := h
		c.change(&other)
		if _, err := restore.ResumeJournal(path, other); !errors.Is(err, restore.ErrJournalMismatch) {
			t.Errorf("resume of another %s: %v, want ErrJournalMismatch", c.name, err)
		}
	}
	// Resumed, the torn line is dropped and new chunks append after.
	j, err = restore.ResumeJournal(path, h)
	if err != nil {
		t.Fatal(err)
	}
	j.Add(plan.Chunks[4].Digest)
	if err := j.Flush(tgt); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if _, done, err = restore.ReadJournal(path); err != nil || len(done) != 4 || !done[plan.Chunks[4].Digest] {
		t.Fatalf("after resume: %d chunks, %v; want 4", len(done), err)
	}

	// The target holds chunks 0, 1 and 4 whole, 2 changed since: only
	// what the target's bytes prove is durable.
	partial := make([]byte, len(img))
	copy(partial, img[:3*cs])
	partial[2*cs+7] ^= 1
	copy(partial[4*cs:], img[4*cs:])
	out := &memTarget{buf: partial}
	whole, err := restore.CheckDurable(context.Background(), out, plan, done, nil, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[crypto.Digest]bool{plan.Chunks[0].Digest: true, plan.Chunks[1].Digest: true, plan.Chunks[4].Digest: true}
	if len(whole) != len(want) {
		t.Errorf("durable %d chunks, want %d", len(whole), len(want))
	}
	for d := range want {
		if !whole[d] {
			t.Errorf("chunk %s whole on the target, not found durable", d)
		}
	}
}

// TestJournalNeverFollowsLinks: whoever can write the target's directory
// may plant symbolic links at the journal's names. A link at the
// temporary name (".new") is removed, never followed: the file it names
// keeps its content and the journal is created. A link (or a file with
// another link) at the journal's own name is refused with ErrJournalUnsafe
// by every reader and writer, and the file it names is neither read into
// an error nor truncated. Before, CreateJournal truncated and overwrote
// the link's target, and a resume truncated it.
func TestJournalNeverFollowsLinks(t *testing.T) {
	h := restore.JournalHeader{Snapshot: "vm/100/2026-01-01T00:00:00Z", Archive: "drive-scsi0.img.fidx", IndexCsum: "00ff", Size: 4096}
	const precious = "precious root-owned file\n"
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte(precious), 0o600); err != nil {
		t.Fatal(err)
	}
	same := func(t *testing.T) {
		t.Helper()
		if b, err := os.ReadFile(victim); err != nil || string(b) != precious {
			t.Fatalf("the file a link named was changed: %q, %v", b, err)
		}
	}
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o777)
	path := filepath.Join(shared, ".disk.img.pbsdirect-journal")

	// A link at the temporary name.
	if err := os.Symlink(victim, path+".new"); err != nil {
		t.Fatal(err)
	}
	j, err := restore.CreateJournal(path, h)
	if err != nil {
		t.Fatalf("a stale link at the temporary name: %v; want it removed and the journal created", err)
	}
	j.Close()
	same(t)
	if got, _, err := restore.ReadJournal(path); err != nil || got != h {
		t.Fatalf("journal read back %+v, %v", got, err)
	}
	if err := j.Complete(h, restore.Completion{Size: 4096}); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + ".new")
	if err := os.Symlink(victim, path+".new"); err != nil {
		t.Fatal(err)
	}
	j, err = restore.ResumeJournal(path, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Complete(h, restore.Completion{Size: 4096}); err != nil {
		t.Fatalf("Complete with a link at the temporary name: %v", err)
	}
	same(t)

	// A link at the journal's name, and a hard link.
	for _, plant := range []struct {
		name string
		make func() error
	}{
		{"symlink", func() error { return os.Symlink(victim, path) }},
		{"hardlink", func() error { return os.Link(victim, path) }},
	} {
		t.Run(plant.name, func(t *testing.T) {
			os.Remove(path)
			if err := plant.make(); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			_, _, rerr := restore.ReadJournal(path)
			_, _, cerr := restore.ReadCompletion(path)
			_, jerr := restore.ResumeJournal(path, h)
			for what, err := range map[string]error{"ReadJournal": rerr, "ReadCompletion": cerr, "ResumeJournal": jerr} {
				if !errors.Is(err, restore.ErrJournalUnsafe) || strings.Contains(err.Error(), "precious") {
					t.Errorf("%s over a %s: %v; want ErrJournalUnsafe, nothing read", what, plant.name, err)
				}
			}
			if plant.name == "symlink" {
				if _, err := restore.CreateJournal(path, h); !errors.Is(err, restore.ErrJournalUnsafe) {
					t.Errorf("CreateJournal over a symlink: %v; want ErrJournalUnsafe", err)
				}
			}
			same(t)
		})
	}
}
