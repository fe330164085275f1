package filetarget

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/index"

	"github.com/pbsdirect/pbsdirect/restore"
)

// ErrSectorSize is wrapped (with restore.ErrTargetUnusable: exit 2) by
// SectorSizeMismatch: the image's partition table was written for
// another logical sector size than the target device has, so on that
// device it is not found.
var ErrSectorSize = errors.New("partition table sector size differs from the device's")

// HeadBytes is how much of an image PartitionSectorSize looks at.
const HeadBytes = 8192

// PartitionSectorSize returns the logical sector size in bytes that a GPT
// in head (an image's first HeadBytes bytes) was written for: its header
// ("EFI PART") sits in LBA 1, at byte 512 for 512-byte sectors and at
// byte 4096 for 4096-byte ones. It returns 0 when head holds no GPT.
func PartitionSectorSize(head []byte) int {
	for _, ss := range []int{512, 4096} {
		if len(head) >= ss+8 && string(head[ss:ss+8]) == "EFI PART" {
			return ss
		}
	}
	return 0
}

// DeviceSectorSize returns the logical sector size in bytes (BLKSSZGET)
// of the block device at path (symbolic links followed), or 0 when path
// is not a block device (a regular file, a missing path).
func DeviceSectorSize(path string) (int, error) {
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeDevice == 0 || st.Mode()&os.ModeCharDevice != 0 {
		return 0, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	ss, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET)
	if err != nil {
		return 0, fmt.Errorf("%s: logical sector size (BLKSSZGET): %w", path, err)
	}
	return ss, nil
}

// SectorSizeMismatch is the error for an image whose partition table is
// for imageSS-byte sectors going to the device target with deviceSS-byte
// logical sectors; it wraps ErrSectorSize and restore.ErrTargetUnusable.
func SectorSizeMismatch(target string, imageSS, deviceSS int) error {
	return restore.Unusable(fmt.Errorf("%s: %w: the image's GPT partition table is for %d-byte sectors (its header at byte %d), the device has %d-byte logical sectors, "+
		"where that partition table is not found (its partitions would not be seen, the disk would not boot); nothing was written: "+
		"restore to a device with %d-byte sectors or to a file, or give --force to write the image anyway",
		target, ErrSectorSize, imageSS, imageSS, deviceSS, imageSS))
}

// CheckSectorSize compares the sector size the image's GPT was written
// for (PartitionSectorSize of head's HeadBytes: the image's first bytes,
// read and checked from the store) with the logical sector size of the
// block device at path: on a mismatch the partition table is not found
// on that device, so the restore is refused (SectorSizeMismatch, exit 2)
// or, with force, a warning is said through note. A file target, an image
// without a GPT and a first chunk that cannot be read (the restore itself
// reports it) pass; ctx's error is returned.
func CheckSectorSize(ctx context.Context, path string, head func(context.Context, int) ([]byte, error), force bool, note func(string)) error {
	devSS, err := DeviceSectorSize(path)
	if err != nil || devSS == 0 {
		return nil // not a device, or Open says why
	}
	b, err := head(ctx, HeadBytes)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	imgSS := PartitionSectorSize(b)
	if imgSS == 0 || imgSS == devSS {
		return nil
	}
	err = SectorSizeMismatch(path, imgSS, devSS)
	if !force {
		return err
	}
	if note != nil {
		note("warning: --force: writing anyway: " + index.DisplayText(err.Error()))
	}
	return nil
}
