package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestTargetRefusalExitCodes: the errors of real target refusals map to
// 2 when the command line names a target that cannot take the restore
// (usage), and to 3 when the target is busy, in use or out of space (a
// retry later may help); a backup over an existing snapshot exits 3.
func TestTargetRefusalExitCodes(t *testing.T) {
	dir := t.TempDir()
	existing := fixture.WriteFile(t, dir, "old.raw", []byte("old"))
	qcow := fixture.WriteFile(t, dir, "vm.qcow2", append([]byte("QFI\xfb\x00\x00\x00\x03"), make([]byte, 4096)...))
	link := filepath.Join(dir, "link.raw")
	if err := os.Symlink(existing, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	inStore := filepath.Join(store, "x.raw")
	const size = 1 << 20
	for _, c := range []struct {
		name string
		path string
		opts filetarget.Options
		want int
	}{
		{"exists without --force", existing, filetarget.Options{}, 2},
		{"symlink without --follow-symlinks", link, filetarget.Options{Force: true}, 2},
		{"qcow2", qcow, filetarget.Options{Force: true}, 2},
		{"directory", dir, filetarget.Options{Force: true}, 2},
		{"FIFO", fifo, filetarget.Options{Force: true}, 2},
		{"/dev/null", "/dev/null", filetarget.Options{Force: true}, 2},
		{"missing directory", filepath.Join(dir, "nodir", "t.raw"), filetarget.Options{}, 2},
		{"not a directory", filepath.Join(existing, "t.raw"), filetarget.Options{}, 2},
		{"inside the store", inStore, filetarget.Options{StoreDir: store}, 2},
		{"no space", existing, filetarget.Options{Force: true, DataBytes: 1 << 60}, 3},
	} {
		tg, err := filetarget.Open(c.path, size, c.opts)
		if err == nil {
			tg.Close(true)
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if got := exitCode(err); got != c.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", c.name, err, got, c.want)
		}
	}
	// A device smaller than the image.
	dev, _ := fixture.LoopDevice(t, size, []byte{1})
	if _, err := filetarget.Open(dev, 2*size, filetarget.Options{}); exitCode(err) != 2 {
		t.Errorf("device too small: exitCode(%v) = %d, want 2", err, exitCode(err))
	}
	// Busy: a second open of the same target.
	tg, err := filetarget.Open(filepath.Join(dir, "busy.raw"), size, filetarget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(true)
	if _, err := filetarget.Open(filepath.Join(dir, "busy.raw"), size, filetarget.Options{}); exitCode(err) != 3 {
		t.Errorf("busy: exitCode(%v) = %d, want 3", err, exitCode(err))
	}
	if got := exitCode(fmt.Errorf("backup: %w", backup.ErrSnapshotExists)); got != 3 {
		t.Errorf("snapshot exists: exitCode = %d, want 3", got)
	}
}

// TestInterruptedPartialSaid: a restore interrupted after it changed an
// existing target says that the target holds a partial image, and keeps
// the signal's exit code; one that changed nothing does not claim a
// partial image.
func TestInterruptedPartialSaid(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&cli.InterruptedError{Sig: syscall.SIGTERM})
	err := interrupted(ctx, restore.Failed("a.img.fidx", "/dev/sdz", true, context.Canceled))
	if exitCode(err) != 143 || !strings.Contains(err.Error(), "interrupted (SIGTERM)") || !strings.Contains(err.Error(), "/dev/sdz now holds a partial image") {
		t.Errorf("partial: %v (code %d)", err, exitCode(err))
	}
	err = interrupted(ctx, restore.Failed("a.img.fidx", "/t/new.img", false, context.Canceled))
	if exitCode(err) != 143 || !strings.HasPrefix(err.Error(), "interrupted (SIGTERM)") || strings.Contains(err.Error(), "partial image") {
		t.Errorf("nothing changed: %v (code %d)", err, exitCode(err))
	}
}
