package extract

import (
	"encoding/binary"
	"sort"

	"github.com/pbsdirect/pbsdirect/pxar"
)

// POSIX ACL xattr format of the Linux kernel (include/uapi/linux/posix_acl_xattr.h):
// a little-endian u32 version (2), then entries of tag u16, perm u16, id u32,
// sorted by tag and, within a tag, by id.
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
)

// Xattr names of the POSIX ACLs and file capabilities.
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
	xattrCaps       = "security.capability"
)

type aclEntry struct {
	tag  uint16
	perm uint16
	id   uint32
}

func encodeACL(es []aclEntry) []byte {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].tag != es[j].tag {
			return es[i].tag < es[j].tag
		}
		return es[i].id < es[j].id
	})
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// accessACL returns the system.posix_acl_access value of an entry with
// mode and acl, its ids mapped by idmap; nil when the ACL adds nothing to
// the mode bits. The owner, group-or-mask and other entries come from the
// mode (the group bits are the mask when named entries exist), as pxar
// stores them.
func accessACL(mode uint64, acl *pxar.ACL, idmap func(uint32) uint32) []byte {
	if len(acl.Users) == 0 && len(acl.Groups) == 0 && acl.GroupObj == nil {
		return nil
	}
	perm := func(p uint64) uint16 { return uint16(p & 7) }
	es := []aclEntry{{aclUserObj, perm(mode >> 6), aclNoID}, {aclOther, perm(mode), aclNoID}}
	group := perm(mode >> 3)
	if acl.GroupObj != nil {
		group = perm(*acl.GroupObj)
	}
	es = append(es, aclEntry{aclGroupObj, group, aclNoID}, aclEntry{aclMask, perm(mode >> 3), aclNoID})
	for _, u := range acl.Users {
		es = append(es, aclEntry{aclUser, perm(u.Permissions), idmap(uint32(u.ID))})
	}
	for _, g := range acl.Groups {
		es = append(es, aclEntry{aclGroup, perm(g.Permissions), idmap(uint32(g.ID))})
	}
	return encodeACL(es)
}

// defaultACL returns a directory's system.posix_acl_default value, nil
// when it has none.
func defaultACL(acl *pxar.ACL, idmap func(uint32) uint32) []byte {
	if acl.Default == nil && len(acl.DefaultUsers) == 0 && len(acl.DefaultGroups) == 0 {
		return nil
	}
	perm := func(p uint64) uint16 { return uint16(p & 7) }
	var es []aclEntry
	if d := acl.Default; d != nil {
		es = append(es, aclEntry{aclUserObj, perm(d.UserObj), aclNoID}, aclEntry{aclGroupObj, perm(d.GroupObj), aclNoID},
			aclEntry{aclOther, perm(d.Other), aclNoID})
		if d.Mask != pxar.ACLNoMask {
			es = append(es, aclEntry{aclMask, perm(d.Mask), aclNoID})
		}
	}
	for _, u := range acl.DefaultUsers {
		es = append(es, aclEntry{aclUser, perm(u.Permissions), idmap(uint32(u.ID))})
	}
	for _, g := range acl.DefaultGroups {
		es = append(es, aclEntry{aclGroup, perm(g.Permissions), idmap(uint32(g.ID))})
	}
	return encodeACL(es)
}

// Capability xattr revision 3 (VFS_CAP_REVISION_3) carries the root uid of
// the user namespace the capabilities are for, at byte 20 of 24.
const (
	capRevisionMask = 0xff000000
	capRevision3    = 0x03000000
	capV3Size       = 24
)

// mapCaps returns a security.capability value with a revision-3 root uid
// mapped by idmap; other revisions are returned as they are.
func mapCaps(v []byte, idmap func(uint32) uint32) []byte {
	if len(v) != capV3Size || binary.LittleEndian.Uint32(v)&capRevisionMask != capRevision3 {
		return v
	}
	out := append([]byte(nil), v...)
	binary.LittleEndian.PutUint32(out[20:], idmap(binary.LittleEndian.Uint32(v[20:])))
	return out
}
