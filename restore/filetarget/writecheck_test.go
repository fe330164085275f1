package filetarget

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckWriteFileReadOnlyDir: a file whose directory cannot take a new
// file (a read-only bind mount as root, mode 0555 otherwise) is refused
// by CheckWriteFile, naming the directory, and nothing is created.
func TestCheckWriteFileReadOnlyDir(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	want := unix.EACCES
	if os.Geteuid() == 0 {
		if err := unix.Mount(t.TempDir(), ro, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("no bind mount: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
		if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Skipf("no read-only remount: %v", err)
		}
		want = unix.EROFS
	} else {
		os.Chmod(ro, 0o555)
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
	}
	err := CheckWriteFile(filepath.Join(ro, "qemu-server.conf"), Options{})
	if !errors.Is(err, want) {
		t.Errorf("CheckWriteFile in a read-only directory: %v, want %v", err, want)
	}
	if err := CheckWriteFile(filepath.Join(t.TempDir(), "qemu-server.conf"), Options{}); err != nil {
		t.Errorf("CheckWriteFile in a writable directory: %v", err)
	}
}
