package extract

import "encoding/binary"

// Xattr names of the POSIX ACLs and file capabilities.
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
	xattrCaps       = "security.capability"
)

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
