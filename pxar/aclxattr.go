package pxar

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// POSIX ACL xattr form of the Linux kernel (include/uapi/linux/
// posix_acl_xattr.h), the value of system.posix_acl_access and
// system.posix_acl_default: a little-endian u32 version 2, then 8-byte
// entries of tag u16, perm u16, id u32, sorted by tag and, within a tag,
// by id. Entries without an id (owner, owning group, mask, other) carry
// aclNoID.
const (
	aclXattrVersion = 2
	aclUserObj      = 0x01
	aclUser         = 0x02
	aclGroupObj     = 0x04
	aclGroup        = 0x08
	aclMask         = 0x10
	aclOther        = 0x20
	aclNoID         = 0xffffffff
)

// AccessXattr returns the system.posix_acl_access value (the kernel's
// binary form above) of an entry with st_mode mode and ACL a, or nil when
// a adds nothing to the mode bits. As in the archive and the kernel, the
// owner and other entries and the mask are the mode's bits (the group
// bits are the mask, always written), and the owning group's entry is
// a.GroupObj, or the mode's group bits when a has none. The named users'
// and groups' ids are mapped by idmap (nil: as stored) and truncated to
// 32 bits; permissions keep their low 3 bits.
func (a *ACL) AccessXattr(mode uint64, idmap func(uint32) uint32) []byte {
	if len(a.Users) == 0 && len(a.Groups) == 0 && a.GroupObj == nil {
		return nil
	}
	mask := mode >> 3 & 7
	groupObj := mask
	if a.GroupObj != nil {
		groupObj = *a.GroupObj
	}
	return aclXattr(mode>>6, a.Users, groupObj, a.Groups, &mask, mode, idmap)
}

// DefaultXattr returns the system.posix_acl_default value (the kernel's
// binary form above) of a directory with ACL a, or nil when it has no
// default ACL base entries (a.Default nil; named default entries alone
// are no ACL the kernel accepts, and are dropped). A default ACL with
// named entries but no mask (Mask ACLNoMask) gets the union of the owning
// group's and the named entries' permissions as its mask, as setfacl
// computes it: the kernel refuses named entries without a mask. Ids are
// mapped by idmap (nil: as stored) as in AccessXattr.
func (a *ACL) DefaultXattr(idmap func(uint32) uint32) []byte {
	d := a.Default
	if d == nil {
		return nil
	}
	var mask *uint64
	if d.Mask != ACLNoMask {
		m := d.Mask
		mask = &m
	} else if len(a.DefaultUsers) > 0 || len(a.DefaultGroups) > 0 {
		m := d.GroupObj
		for _, e := range a.DefaultUsers {
			m |= e.Permissions
		}
		for _, e := range a.DefaultGroups {
			m |= e.Permissions
		}
		mask = &m
	}
	return aclXattr(d.UserObj, a.DefaultUsers, d.GroupObj, a.DefaultGroups, mask, d.Other, idmap)
}

// aclXattr encodes base and named entries in the kernel's xattr form,
// permissions masked to 3 bits, named ids mapped by idmap (nil: identity)
// then sorted; a nil mask omits the mask entry.
func aclXattr(userObj uint64, users []ACLEntry, groupObj uint64, groups []ACLEntry, mask *uint64, other uint64, idmap func(uint32) uint32) []byte {
	le := binary.LittleEndian
	b := make([]byte, 0, 4+8*(4+len(users)+len(groups)))
	b = le.AppendUint32(b, aclXattrVersion)
	put := func(tag uint16, perm uint64, id uint32) {
		b = le.AppendUint16(b, tag)
		b = le.AppendUint16(b, uint16(perm&7))
		b = le.AppendUint32(b, id)
	}
	type named struct {
		id   uint32
		perm uint64
	}
	putNamed := func(tag uint16, l []ACLEntry) {
		ns := make([]named, len(l))
		for i, e := range l {
			id := uint32(e.ID)
			if idmap != nil {
				id = idmap(id)
			}
			ns[i] = named{id, e.Permissions}
		}
		slices.SortStableFunc(ns, func(x, y named) int { return cmp.Compare(x.id, y.id) })
		for _, n := range ns {
			put(tag, n.perm, n.id)
		}
	}
	put(aclUserObj, userObj, aclNoID)
	putNamed(aclUser, users)
	put(aclGroupObj, groupObj, aclNoID)
	putNamed(aclGroup, groups)
	if mask != nil {
		put(aclMask, *mask, aclNoID)
	}
	put(aclOther, other, aclNoID)
	return b
}

// decodeACLXattr decodes a system.posix_acl_access (dflt false) or
// system.posix_acl_default value into acl, as proxmox-backup-client stores
// them: for the access ACL the named users and groups, and the group-owner
// entry only when there is a mask (the mode's group bits then hold the
// mask); for the default ACL its base entries (ACLNoMask for one that is
// missing) and named entries. A value that is not that form (version,
// length, unknown tag) is an error.
func decodeACLXattr(v []byte, dflt bool, acl *ACL) error {
	le := binary.LittleEndian
	if len(v) < 4 || (len(v)-4)%8 != 0 || le.Uint32(v) != aclXattrVersion {
		return fmt.Errorf("not a version-%d POSIX ACL (%d bytes)", aclXattrVersion, len(v))
	}
	var users, groups []ACLEntry
	var userObj, groupObj, other, mask *uint64
	for b := v[4:]; len(b) > 0; b = b[8:] {
		tag, perm, id := le.Uint16(b), uint64(le.Uint16(b[2:])&7), uint64(le.Uint32(b[4:]))
		switch tag {
		case aclUserObj:
			userObj = &perm
		case aclGroupObj:
			groupObj = &perm
		case aclOther:
			other = &perm
		case aclMask:
			mask = &perm
		case aclUser:
			users = append(users, ACLEntry{id, perm})
		case aclGroup:
			groups = append(groups, ACLEntry{id, perm})
		default:
			return fmt.Errorf("unknown ACL entry tag %#x", tag)
		}
	}
	if !dflt {
		acl.Users, acl.Groups = users, groups
		if groupObj != nil && mask != nil {
			acl.GroupObj = groupObj
		}
		return nil
	}
	or := func(p *uint64) uint64 {
		if p == nil {
			return ACLNoMask
		}
		return *p
	}
	if userObj != nil || groupObj != nil || other != nil || mask != nil {
		acl.Default = &ACLDefault{UserObj: or(userObj), GroupObj: or(groupObj), Other: or(other), Mask: or(mask)}
	}
	acl.DefaultUsers, acl.DefaultGroups = users, groups
	return nil
}
