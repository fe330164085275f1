package filetarget_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// smallExt4 mounts a fresh ext4 file system of size bytes (on a loop
// device) and returns its mount point.
func smallExt4(t *testing.T, size int64) string {
	t.Helper()
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		fixture.SkipOrFail(t, "mkfs.ext4 not available: %v", err)
	}
	dev, _ := fixture.LoopDevice(t, size, nil)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	mnt := t.TempDir()
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		fixture.SkipOrFail(t, "mount ext4: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("umount %s: %v", mnt, err)
		}
	})
	return mnt
}

// extents lists the data and hole ranges of the file p (SEEK_DATA/SEEK_HOLE
// up to its size).
func extents(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	var b strings.Builder
	for pos := int64(0); pos < st.Size(); {
		d, err := unix.Seek(int(f.Fd()), pos, unix.SEEK_DATA)
		if err != nil {
			break
		}
		h, _ := unix.Seek(int(f.Fd()), d, unix.SEEK_HOLE)
		fmt.Fprintf(&b, "[%d,%d) ", d, h)
		pos = h
	}
	return b.String()
}

// TestForceReserveNoSpace: when the file system fills up between the
// free-space check and the reservation (another restore took the space),
// an existing --force target is left exactly as it was — size, content,
// allocated blocks — and the error is ErrNoSpace saying nothing was
// written. Before, the file was truncated to the image size and its holes
// punched first, then the reservation failed.
func TestForceReserveNoSpace(t *testing.T) {
	mnt := smallExt4(t, 32<<20)
	old := fixture.Build(3, fixture.Region{Kind: fixture.Random, Len: 1 << 20}, fixture.Region{Kind: fixture.Zero, Len: 3 << 20}, fixture.Region{Kind: fixture.Random, Len: 1 << 20})
	p := fixture.WriteFile(t, mnt, "old.img", old)
	// Punch the zero region, so the old file has a hole to keep.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 1<<20, 3<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := extents(t, p)
	var st0 unix.Stat_t
	if err := unix.Stat(p, &st0); err != nil {
		t.Fatal(err)
	}
	const size = 256 << 20
	ranges := slices.Values([]restore.Range{{Offset: 0, Length: 2 << 20}, {Offset: 64 << 20, Length: 128 << 20}})
	// DataBytes 0 skips the statfs check: the reservation is what fails, as
	// when another run took the space after the check.
	tg, err := filetarget.Open(p, size, filetarget.Options{Force: true, Reserve: ranges})
	if err == nil {
		tg.Close(true)
	}
	if !errors.Is(err, restore.ErrNoSpace) || !errors.Is(err, unix.ENOSPC) || !bytes.Contains([]byte(err.Error()), []byte("nothing was written")) {
		t.Fatalf("got %v, want ErrNoSpace (ENOSPC) saying nothing was written", err)
	}
	if after := extents(t, p); after != before {
		t.Errorf("target's data extents changed by a failed reservation:\nbefore %s\nafter  %s", before, after)
	}
	var st1 unix.Stat_t
	if err := unix.Stat(p, &st1); err != nil {
		t.Fatal(err)
	}
	// The extent tree may keep a block it grew meanwhile: metadata, not data.
	if st1.Size != st0.Size || st1.Blocks > st0.Blocks+16 || st1.Blocks < st0.Blocks {
		t.Errorf("size/allocation %d/%d, was %d/%d", st1.Size, st1.Blocks*512, st0.Size, st0.Blocks*512)
	}
	fixture.Equal(t, p, old)

	// With room, the reservation succeeds and the restore goes on.
	tg, err = filetarget.Open(p, 8<<20, filetarget.Options{Force: true, Reserve: slices.Values([]restore.Range{{Offset: 0, Length: 8 << 20}})})
	if err != nil {
		t.Fatal(err)
	}
	tg.Close(true)
	if _, err := os.Stat(filepath.Join(mnt, "old.img")); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyDeviceRefused: a read-only block device opens for writing
// but refuses every write; OpenTarget finds it (BLKROGET) before the
// work, with EROFS, and the device is unchanged.
func TestReadOnlyDeviceRefused(t *testing.T) {
	const size = 1 << 20
	backing := fixture.WriteFile(t, t.TempDir(), "ro.img", bytes.Repeat([]byte{7}, size))
	// losetup -r: read-only for this attachment only (blockdev --setro
	// would stay on the loop device after it is detached).
	out, err := exec.Command("losetup", "-r", "-f", "--show", backing).CombinedOutput()
	if err != nil {
		fixture.SkipOrFail(t, "losetup -r: %v %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	tg, err := filetarget.Open(dev, size, filetarget.Options{})
	if err == nil {
		tg.Close(true)
	}
	if !errors.Is(err, unix.EROFS) || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("got %v, want EROFS saying read-only and nothing was written", err)
	}
	fixture.Equal(t, dev, bytes.Repeat([]byte{7}, size))
}

// TestLockHolderNamed: a target locked by another program (flock(1)) is
// refused as busy naming the PID and its command, without calling it a
// pbsdirect run.
func TestLockHolderNamed(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		fixture.SkipOrFail(t, "flock not available: %v", err)
	}
	p := fixture.WriteFile(t, t.TempDir(), "held.img", []byte("old"))
	cmd := exec.Command("flock", "-x", p, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var err error
	for range 100 {
		var tg *filetarget.Target
		if tg, err = filetarget.Open(p, 1<<20, filetarget.Options{Force: true}); err == nil {
			tg.Close(true)
			time.Sleep(20 * time.Millisecond) // flock has not locked yet
			continue
		}
		break
	}
	want := fmt.Sprintf("held by PID %d (flock)", cmd.Process.Pid)
	if !errors.Is(err, restore.ErrTargetBusy) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pbsdirect run") {
		t.Fatalf("got %v, want ErrTargetBusy saying %q and not a pbsdirect run", err, want)
	}
}

// TestLoopBackingLocked: a loop device target and its backing file share
// one lock. A run holding the file's lock (a --force restore into it that
// began before the device was attached) makes a restore into the device
// busy; a restore into the device holds the file's lock for its run.
func TestLoopBackingLocked(t *testing.T) {
	const size = 1 << 20
	dev, backing := fixture.LoopDevice(t, size, []byte{9})
	f, err := os.Open(backing)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if tg, err := filetarget.Open(dev, size, filetarget.Options{}); !errors.Is(err, restore.ErrTargetBusy) || !strings.Contains(err.Error(), backing) {
		if err == nil {
			tg.Close(true)
		}
		t.Fatalf("device over a locked file: got %v, want ErrTargetBusy naming %s", err, backing)
	}
	f.Close()
	tg, err := filetarget.Open(dev, size, filetarget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(true)
	g, err := os.Open(backing)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("backing file not locked while the device is restored: %v", err)
	}
}

// TestRecordLockedRefused: a file another open file description holds an
// OFD lock on (as QEMU and qemu-nbd lock the images they run, a read lock
// on a single byte) is refused with ErrTargetInUse and left alone; with
// the lock gone, the --force restore opens it.
func TestRecordLockedRefused(t *testing.T) {
	old := bytes.Repeat([]byte{4}, 8192)
	p := fixture.WriteFile(t, t.TempDir(), "vm.raw", old)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Start: 201, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	tg, err := filetarget.Open(p, 1<<20, filetarget.Options{Force: true})
	if err == nil {
		tg.Close(true)
	}
	if !errors.Is(err, restore.ErrTargetInUse) || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("got %v, want ErrTargetInUse naming the lock", err)
	}
	fixture.Equal(t, p, old)
	f.Close()
	if tg, err = filetarget.Open(p, 1<<20, filetarget.Options{Force: true}); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	tg.Close(true)
}

// TestBlobTargetChecks: a blob restored with --force over an existing file
// gets the checks of an image target: a qcow2 or LUKS file and a file
// QEMU holds locks on are refused and left as they were.
func TestBlobTargetChecks(t *testing.T) {
	dir := t.TempDir()
	qcow := append([]byte("QFI\xfb\x00\x00\x00\x03"), make([]byte, 4096)...)
	luks := append([]byte("LUKS\xba\xbe\x00\x02"), make([]byte, 4096)...)
	qp := fixture.WriteFile(t, dir, "vm.qcow2", qcow)
	lp := fixture.WriteFile(t, dir, "crypt.img", luks)
	locked := fixture.WriteFile(t, dir, "running.raw", []byte("in use"))
	f, err := os.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_RDLCK, Start: 201, Len: 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		old  []byte
		want error
	}{{qp, qcow, restore.ErrTargetFormat}, {lp, luks, restore.ErrTargetFormat}, {locked, []byte("in use"), restore.ErrTargetInUse}} {
		if err := filetarget.WriteFile(c.path, []byte("memory: 512\n"), filetarget.Options{Force: true}); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.path, err, c.want)
		}
		fixture.Equal(t, c.path, c.old)
	}
}

// TestLongTargetName: a target name of up to 255 bytes is restored (its
// partial output gets a shortened name), and two long names that share a
// prefix do not share a partial name (each restore has its own lock).
func TestLongTargetName(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, strings.Repeat("a", 250)+"1.img")
	b := filepath.Join(dir, strings.Repeat("a", 250)+"2.img")
	ta, err := filetarget.Open(a, 1<<20, filetarget.Options{})
	if err != nil {
		t.Fatalf("255-byte name: %v", err)
	}
	defer ta.Close(true)
	tb, err := filetarget.Open(b, 1<<20, filetarget.Options{})
	if err != nil {
		t.Fatalf("second long name sharing a prefix: %v", err)
	}
	if err := tb.Close(false); err != nil {
		t.Fatal(err)
	}
	if err := ta.Close(false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, b} {
		if st, err := os.Stat(p); err != nil || st.Size() != 1<<20 {
			t.Errorf("%s: %v %v", filepath.Base(p), st, err)
		}
	}
}

// TestDeviceFormatAdvice: a qcow2 signature on a block device is refused
// with the advice to clear the signature (wipefs), not to remove the
// device node.
func TestDeviceFormatAdvice(t *testing.T) {
	dev, _ := fixture.LoopDevice(t, 1<<20, []byte("QFI\xfb\x00\x00\x00\x03"))
	_, err := filetarget.Open(dev, 1<<20, filetarget.Options{})
	if !errors.Is(err, restore.ErrTargetFormat) || !strings.Contains(err.Error(), "wipefs -a "+dev) || strings.Contains(err.Error(), "remove "+dev) {
		t.Fatalf("got %v, want a wipefs hint", err)
	}
}
