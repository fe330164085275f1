package pxar

// Kind is the type of an archive entry.
type Kind int

// Entry kinds.
const (
	KindFile Kind = iota + 1
	KindDir
	KindSymlink
	KindHardlink
	KindDevice // character or block device: see Mode
	KindFIFO
	KindSocket
)

// String names the kind ("file", "dir", …).
func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	case KindHardlink:
		return "hardlink"
	case KindDevice:
		return "device"
	case KindFIFO:
		return "fifo"
	case KindSocket:
		return "socket"
	}
	return "unknown"
}

// Xattr is one extended attribute: its name (no NUL) and value.
type Xattr struct {
	Name  []byte
	Value []byte
}

// ACLEntry is one named POSIX ACL entry: a uid (user entries) or gid
// (group entries) and its permission bits (4 read, 2 write, 1 execute).
type ACLEntry struct {
	ID          uint64
	Permissions uint64
}

// ACLNoMask is the Permissions value of ACLDefault.Mask when the default
// ACL has no mask entry.
const ACLNoMask = ^uint64(0)

// ACLDefault holds a directory's default ACL base entries.
type ACLDefault struct {
	UserObj, GroupObj, Other, Mask uint64
}

// ACL is an entry's POSIX access and default ACL beyond the mode bits.
// GroupObj (the group-owner entry when a mask is present) and Default
// are nil when absent.
type ACL struct {
	Users, Groups               []ACLEntry
	GroupObj                    *uint64
	Default                     *ACLDefault
	DefaultUsers, DefaultGroups []ACLEntry
}

// Empty reports whether the ACL has no entries at all.
func (a *ACL) Empty() bool {
	return len(a.Users) == 0 && len(a.Groups) == 0 && a.GroupObj == nil && a.Default == nil &&
		len(a.DefaultUsers) == 0 && len(a.DefaultGroups) == 0
}

// Device is a device node's major and minor number.
type Device struct {
	Major, Minor uint64
}

// Metadata is what an entry's ENTRY item and attribute items carry.
// Mode is the full st_mode (file type and permission bits); MTimeSec and
// MTimeNsec the modification time (seconds since the epoch, may be
// negative; nanoseconds 0–999,999,999).
type Metadata struct {
	Mode           uint64
	Flags          uint64
	UID, GID       uint32
	MTimeSec       int64
	MTimeNsec      uint32
	Xattrs         []Xattr
	ACL            ACL
	FCaps          []byte // nil when absent
	QuotaProjectID *uint64
}
