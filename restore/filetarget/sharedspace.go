package filetarget

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FIEMAP (linux/fiemap.h): not in x/sys/unix.
const (
	fsIocFiemap        = 0xC020660B // _IOWR('f', 11, struct fiemap)
	fiemapExtentLast   = 0x1
	fiemapExtentShared = 0x2000
	fiemapHeader       = 32 // struct fiemap without its extents
	fiemapExtentSize   = 56 // struct fiemap_extent
	fiemapBatch        = 256
	fsComprFl          = 0x4        // FS_COMPR_FL (chattr +c)
	fsNocowFl          = 0x00800000 // FS_NOCOW_FL (chattr +C)
)

// SharedBytes returns how many bytes of the file f's extents are shared
// with other files or snapshots (FIEMAP_EXTENT_SHARED: btrfs snapshots
// and reflinks, XFS and bcachefs reflinks). Overwriting those bytes
// allocates new space and frees none. A file system without FIEMAP, or one
// that does not report sharing (ZFS), yields 0; other errors are returned.
func SharedBytes(f *os.File) (int64, error) {
	buf := make([]byte, fiemapHeader+fiemapBatch*fiemapExtentSize)
	var shared int64
	for start := uint64(0); ; {
		clear(buf)
		le := binary.NativeEndian
		le.PutUint64(buf[0:], start)
		le.PutUint64(buf[8:], ^uint64(0)-start)
		le.PutUint32(buf[24:], fiemapBatch) // fm_extent_count
		_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if e != 0 {
			if errors.Is(e, unix.EOPNOTSUPP) || errors.Is(e, unix.ENOTTY) || errors.Is(e, unix.EINVAL) {
				return 0, nil
			}
			return 0, e
		}
		n := int(le.Uint32(buf[20:])) // fm_mapped_extents
		if n == 0 {
			return shared, nil
		}
		last := false
		for i := range n {
			x := buf[fiemapHeader+i*fiemapExtentSize:]
			logical, length, flags := le.Uint64(x[0:]), le.Uint64(x[16:]), le.Uint32(x[40:])
			if flags&fiemapExtentShared != 0 {
				shared += int64(length)
			}
			start = logical + length
			last = last || flags&fiemapExtentLast != 0
		}
		if last {
			return shared, nil
		}
	}
}

// mayCompress reports whether data written to f may be stored compressed
// on btrfs or bcachefs: the file has compression set (chattr +c, or the
// btrfs.compression or bcachefs.compression property, inherited from its
// directory), or the mount that holds it has compress, compress-force or
// compression. Its free space then says only so much about whether an
// image's data fits.
func mayCompress(f *os.File) bool {
	if fl, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS); err == nil && fl&fsComprFl != 0 {
		return true
	}
	for _, attr := range []string{"btrfs.compression", "bcachefs.compression", "bcachefs.background_compression"} {
		if n, err := unix.Fgetxattr(int(f.Fd()), attr, nil); err == nil && n > 0 {
			return true
		}
	}
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil || !filepath.IsAbs(real) {
		return true // cannot tell: as before, no check
	}
	opts, ok := mountOptionsOf(real)
	return !ok || strings.Contains(opts, "compress")
}

// copyOnWrite reports whether overwriting f's data allocates new space
// before the old is freed: on btrfs unless f has the NOCOW attribute
// (chattr +C), and on bcachefs. fsType is the statfs f_type of f's file
// system. On ext4 and XFS an overwrite stays in place (only shared
// extents, counted by SharedBytes, need new space).
func copyOnWrite(f *os.File, fsType uint32) bool {
	switch fsType {
	case bcachefsMagic:
		return true
	case btrfsMagic:
		fl, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		return err != nil || fl&fsNocowFl == 0
	}
	return false
}

// mountOptionsOf returns the options (per mount and per super block,
// comma-joined) of the mount that holds the absolute path p: the longest
// mount point of /proc/self/mountinfo that p is under.
func mountOptionsOf(p string) (string, bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	defer f.Close()
	best, opts := -1, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 6 || len(tail) < 3 {
			continue
		}
		mp := unescapeMount(fields[4])
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > best {
			best, opts = len(mp), fields[5]+","+tail[2]
		}
	}
	return opts, best >= 0
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			okDigits := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					okDigits = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if okDigits {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
