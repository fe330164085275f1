package filetarget

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// blkZeroOut asks the block device to zero rng = {offset, length} (bytes),
// offloaded where the device supports it (BLKZEROOUT).
func blkZeroOut(fd int, rng *[2]uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKZEROOUT, uintptr(unsafe.Pointer(rng)))
	if errno != 0 {
		return errno
	}
	return nil
}
