package pxar

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TreeStats counts what TreeFromDirStats read beyond mode, owner and
// times: entries (files, directories, …) with extended attributes, ACLs
// or file capabilities stored, and those whose ones could not be read
// (the entry is kept without them).
type TreeStats struct {
	Xattrs int // entries with at least one extended attribute stored
	ACLs   int // entries with an access or default ACL stored
	FCaps  int // regular files with file capabilities stored
	// Unread counts entries whose xattrs, ACLs or capabilities could
	// not be read (or were too large for the format); UnreadSample holds
	// the first MaxUnreadSample of them as "PATH: what: error", the path
	// quoted.
	Unread       int
	UnreadSample []string
	// OtherFS counts directories on another file system (mount points,
	// stored empty: TreeFromDirOpts stays on one file system);
	// OtherFSSample holds the first MaxUnreadSample, quoted.
	OtherFS       int
	OtherFSSample []string
	// Skipped lists the paths (quoted) left out by DirOptions.Skip.
	Skipped []string
}

func (s *TreeStats) otherFS(full string) {
	s.OtherFS++
	if len(s.OtherFSSample) < MaxUnreadSample {
		s.OtherFSSample = append(s.OtherFSSample, strconv.Quote(full))
	}
}

func (s *TreeStats) skipped(full string) {
	s.Skipped = append(s.Skipped, strconv.Quote(full))
}

// MaxUnreadSample is how many TreeStats.UnreadSample messages are kept.
const MaxUnreadSample = 20

func (s *TreeStats) unread(full, what string, err error) {
	s.Unread++
	if len(s.UnreadSample) < MaxUnreadSample {
		s.UnreadSample = append(s.UnreadSample, fmt.Sprintf("%s: %s: %v", strconv.Quote(full), what, err))
	}
}

// Extended attributes with a meaning of their own: the POSIX ACLs (stored
// as ACL items) and the file capabilities (an FCAPS item).
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
	xattrFCaps      = "security.capability"
)

// keepXattr reports whether the xattr name is stored as an XATTR item: as
// proxmox-backup-client keeps them, user.* and trusted.* ones and
// security.NTACL (Samba's Windows ACLs), names of 1–255 bytes. Others
// (security.selinux and the like, system.*) belong to the host that
// restores and are not stored.
func keepXattr(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	return strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "trusted.") || name == "security.NTACL"
}

// Linux limits of one xattr name list and one xattr value.
const (
	xattrListMax = 64 << 10
	xattrSizeMax = 64 << 10
)

// lget reads the xattr attr of full (not followed if a symlink); ok is
// false when it is not there.
func lget(full, attr string) (v []byte, ok bool, err error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(full, attr, buf)
		switch {
		case err == nil:
			return buf[:n], true, nil
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP):
			return nil, false, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < xattrSizeMax:
			buf = make([]byte, xattrSizeMax)
		default:
			return nil, false, err
		}
	}
}

// llist returns the xattr names of full (not followed); none where the
// file system has no xattrs.
func llist(full string) ([]string, error) {
	buf := make([]byte, 1024)
	for {
		n, err := unix.Llistxattr(full, buf)
		switch {
		case err == nil:
			var names []string
			for _, b := range bytes.Split(buf[:n], []byte{0}) {
				if len(b) > 0 {
					names = append(names, string(b))
				}
			}
			slices.Sort(names) // the archive independent of the listing order
			return names, nil
		case errors.Is(err, unix.ENOTSUP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < xattrListMax:
			buf = make([]byte, xattrListMax)
		default:
			return nil, err
		}
	}
}

// readMeta fills n's xattrs, ACL, fcaps and quota project id from full,
// an entry of kind n.Kind (symlinks have none: Linux keeps no user xattrs
// or ACLs on them). What cannot be read is counted in st, not fatal.
func readMeta(full string, n *Node, st *TreeStats) {
	if n.Kind == KindSymlink || n.Kind == KindHardlink {
		return
	}
	names, err := llist(full)
	if err != nil {
		st.unread(full, "list extended attributes", err)
		return
	}
	total, failed := 0, false
names:
	for _, name := range names {
		switch {
		case name == xattrFCaps && n.Kind == KindFile, name == xattrACLAccess, name == xattrACLDefault && n.Kind == KindDir, keepXattr(name):
		default:
			continue
		}
		v, ok, err := lget(full, name)
		if err != nil {
			if !failed {
				st.unread(full, "extended attribute "+strconv.Quote(name), err)
			}
			failed = true
			continue
		}
		if !ok {
			continue // removed since listed
		}
		if total += len(name) + 1 + len(v); total > MaxMetadataBytes {
			if !failed {
				st.unread(full, "extended attributes", fmt.Errorf("over %d bytes: the rest not stored", MaxMetadataBytes))
			}
			failed = true
			break names
		}
		switch name {
		case xattrFCaps:
			n.FCaps = v
		case xattrACLAccess, xattrACLDefault:
			if err := decodeACLXattr(v, name == xattrACLDefault, &n.ACL); err != nil {
				if !failed {
					st.unread(full, name, err)
				}
				failed = true
				continue
			}
		default:
			n.Xattrs = append(n.Xattrs, Xattr{Name: []byte(name), Value: v})
		}
	}
	if n.Kind == KindDir || n.Kind == KindFile {
		n.QuotaProjectID = quotaProjectID(full)
	}
}

// count adds the entries of tree with xattrs, ACLs and fcaps to st
// (hardlinks counted once, as their first link).
func (s *TreeStats) count(n *Node) {
	if len(n.Xattrs) > 0 {
		s.Xattrs++
	}
	if !n.ACL.Empty() {
		s.ACLs++
	}
	if n.FCaps != nil {
		s.FCaps++
	}
	for _, c := range n.Children {
		s.count(c)
	}
}

// fsxattr is struct fsxattr of include/uapi/linux/fs.h (28 bytes).
type fsxattr struct {
	xflags, extsize, nextents, projid, cowextsize uint32
	pad                                           [8]byte
}

// fsIocFSGetXattr is FS_IOC_FSGETXATTR, _IOR('X', 31, struct fsxattr):
// its direction bits are those of FS_IOC_GETFLAGS (_IOR too), which
// differ between architectures.
const fsIocFSGetXattr = unix.FS_IOC_GETFLAGS&0xe0000000 | uint(unsafe.Sizeof(fsxattr{}))<<16 | 'X'<<8 | 31

// quotaProjectID returns the quota project id of the directory or regular
// file full when it has a non-zero one, nil when it has none, the file
// system keeps none or it cannot be opened (optional, as in the backup
// client).
func quotaProjectID(full string) *uint64 {
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var fa fsxattr
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(fsIocFSGetXattr), uintptr(unsafe.Pointer(&fa))); e != 0 || fa.projid == 0 {
		return nil
	}
	id := uint64(fa.projid)
	return &id
}
