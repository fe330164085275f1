package pxar

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelACL builds a system.posix_acl_* value: version 2, then (tag,
// perm, id) entries.
func kernelACL(es ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclXattrVersion)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

const noID = 0xffffffff

func u64(v uint64) *uint64 { return &v }

// TestTreeFromDirMeta: TreeFromDirStats reads user and trusted xattrs,
// an access ACL (named user, mask narrower than the group entry: the
// mode's group bits are the mask, the group entry kept apart), a default
// ACL and file capabilities, counts them, and they survive Encode and
// the decoder; a symlink has none; a symlink given as root is followed.
func TestTreeFromDirMeta(t *testing.T) {
	root := t.TempDir()
	f, d := filepath.Join(root, "f"), filepath.Join(root, "d")
	if err := os.WriteFile(f, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lsetxattr(f, "user.comment", []byte("hello"), 0); errors.Is(err, unix.ENOTSUP) {
		t.Skipf("%s: no user xattrs on this file system", root)
	} else if err != nil {
		t.Fatal(err)
	}
	access := kernelACL([3]uint32{aclUserObj, 6, noID}, [3]uint32{aclUser, 7, 1234}, [3]uint32{aclGroupObj, 5, noID},
		[3]uint32{aclMask, 4, noID}, [3]uint32{aclOther, 0, noID})
	if err := unix.Lsetxattr(f, xattrACLAccess, access, 0); errors.Is(err, unix.ENOTSUP) {
		t.Skipf("%s: no POSIX ACLs on this file system", root)
	} else if err != nil {
		t.Fatal(err)
	}
	dflt := kernelACL([3]uint32{aclUserObj, 7, noID}, [3]uint32{aclUser, 5, 1234}, [3]uint32{aclGroupObj, 5, noID},
		[3]uint32{aclGroup, 7, 2345}, [3]uint32{aclMask, 7, noID}, [3]uint32{aclOther, 0, noID})
	if err := unix.Lsetxattr(d, xattrACLDefault, dflt, 0); err != nil {
		t.Fatal(err)
	}
	// VFS_CAP_REVISION_2, effective: cap_net_raw (13) permitted.
	caps := binary.LittleEndian.AppendUint32(nil, 0x02000001)
	caps = binary.LittleEndian.AppendUint32(caps, 1<<13)
	caps = append(caps, make([]byte, 12)...)
	withCaps := unix.Lsetxattr(f, xattrFCaps, caps, 0) == nil
	withTrusted := unix.Lsetxattr(f, "trusted.t", []byte{0, 1, 2}, 0) == nil

	link := filepath.Join(t.TempDir(), "rootlink")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	var st TreeStats
	tree, err := TreeFromDirStats(link, &st)
	if err != nil {
		t.Fatal(err)
	}
	want := TreeStats{Xattrs: 1, ACLs: 2}
	if withCaps {
		want.FCaps = 1
	}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	meta, payload := encode(t, tree, true)
	a, err := open(meta, payload)
	if err != nil {
		t.Fatal(err)
	}
	fe, err := a.LookupPath("f")
	if err != nil {
		t.Fatal(err)
	}
	if fe.Mode&0o777 != 0o640 {
		t.Errorf("f mode %o, want 640 (group bits: the mask)", fe.Mode&0o777)
	}
	wantX := []Xattr{{[]byte("user.comment"), []byte("hello")}}
	if withTrusted { // sorted by name
		wantX = append([]Xattr{{[]byte("trusted.t"), []byte{0, 1, 2}}}, wantX...)
	}
	if !reflect.DeepEqual(fe.Xattrs, wantX) {
		t.Errorf("f xattrs %q, want %q", fe.Xattrs, wantX)
	}
	if wantACL := (ACL{Users: []ACLEntry{{1234, 7}}, GroupObj: u64(5)}); !reflect.DeepEqual(fe.ACL, wantACL) {
		t.Errorf("f ACL %+v, want %+v", fe.ACL, wantACL)
	}
	if withCaps && string(fe.FCaps) != string(caps) {
		t.Errorf("f fcaps %x, want %x", fe.FCaps, caps)
	}
	de, err := a.LookupPath("d")
	if err != nil {
		t.Fatal(err)
	}
	wantD := ACL{Default: &ACLDefault{UserObj: 7, GroupObj: 5, Other: 0, Mask: 7}, DefaultUsers: []ACLEntry{{1234, 5}}, DefaultGroups: []ACLEntry{{2345, 7}}}
	if !reflect.DeepEqual(de.ACL, wantD) {
		t.Errorf("d ACL %+v, want %+v", de.ACL, wantD)
	}
	if le, err := a.LookupPath("l"); err != nil || len(le.Xattrs) != 0 || !le.ACL.Empty() {
		t.Errorf("symlink: %+v %v", le, err)
	}
}

// TestDecodeACLXattr: the kernel's ACL xattr form as pxar stores it.
func TestDecodeACLXattr(t *testing.T) {
	for _, c := range []struct {
		name string
		v    []byte
		dflt bool
		want ACL
		bad  bool
	}{
		{"no mask: no group object", kernelACL([3]uint32{aclUserObj, 6, noID}, [3]uint32{aclGroupObj, 4, noID}, [3]uint32{aclOther, 4, noID}), false, ACL{}, false},
		{"named group, mask", kernelACL([3]uint32{aclUserObj, 6, noID}, [3]uint32{aclGroupObj, 6, noID}, [3]uint32{aclGroup, 4, 50}, [3]uint32{aclMask, 6, noID}, [3]uint32{aclOther, 0, noID}), false,
			ACL{Groups: []ACLEntry{{50, 4}}, GroupObj: u64(6)}, false},
		{"default without mask", kernelACL([3]uint32{aclUserObj, 7, noID}, [3]uint32{aclGroupObj, 5, noID}, [3]uint32{aclOther, 1, noID}), true,
			ACL{Default: &ACLDefault{7, 5, 1, ACLNoMask}}, false},
		{"version 1", append([]byte{1, 0, 0, 0}, make([]byte, 8)...), false, ACL{}, true},
		{"cut entry", kernelACL([3]uint32{aclUserObj, 7, noID})[:9], false, ACL{}, true},
		{"unknown tag", kernelACL([3]uint32{0x40, 7, noID}), false, ACL{}, true},
	} {
		var got ACL
		err := decodeACLXattr(c.v, c.dflt, &got)
		if (err != nil) != c.bad || (!c.bad && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%s: %+v, %v; want %+v (error %v)", c.name, got, err, c.want, c.bad)
		}
	}
}
