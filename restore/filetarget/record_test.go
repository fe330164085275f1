package filetarget_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestRecordWithoutXattrs: on a file system without user extended
// attributes (ramfs) a file target's record is kept in a
// record file among the journal directories: read back complete, with the
// file's identity; removed again by a run that keeps none. Before, such a
// file system kept no record, and --base could never trust its targets.
func TestRecordWithoutXattrs(t *testing.T) {
	if os.Geteuid() != 0 {
		fixture.SkipOrFail(t, "mounting ramfs needs root")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "ramfs", "ramfs", mnt).CombinedOutput(); err != nil {
		fixture.SkipOrFail(t, "mount -t ramfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	path := filepath.Join(mnt, "disk.img")
	tg, err := filetarget.Open(path, 1<<20, filetarget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(mnt, "user.probe", []byte("1"), 0); err == nil {
		t.Fatal("ramfs keeps user extended attributes: the test needs a file system that does not")
	}
	if err := tg.WriteAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	if err := tg.Commit(); err != nil {
		t.Fatal(err)
	}
	rec := &restore.Record{Snapshot: "vm/100/2026-11-29T10:00:00Z", Archive: "drive-scsi0.img.fidx", Size: 1 << 20, Complete: true}
	if err := tg.KeepRecord(rec); err != nil {
		t.Fatal(err)
	}
	tg.Close(false)
	sink := &filetarget.Sink{Path: path}
	got, err := sink.TargetRecord()
	if err != nil || !got.Complete || got.Snapshot != rec.Snapshot {
		t.Fatalf("record %+v, %v: want %+v", got, err, rec)
	}
	id, err := sink.CurrentIdentity()
	if err != nil || !id.Same(got.Target) {
		t.Errorf("identity %+v, %v: want the recorded %+v", id, err, got.Target)
	}
	tg, err = filetarget.Open(path, 1<<20, filetarget.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.KeepRecord(nil); err != nil {
		t.Fatal(err)
	}
	tg.Close(false)
	if _, err := sink.TargetRecord(); !errorsIsNotExist(err) {
		t.Errorf("record after removal: %v, want none", err)
	}
}

// errorsIsNotExist reports whether err wraps os.ErrNotExist.
func errorsIsNotExist(err error) bool { return err != nil && errors.Is(err, os.ErrNotExist) }
