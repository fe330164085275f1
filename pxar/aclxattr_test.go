package pxar

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// TestACLXattr: AccessXattr and DefaultXattr against the kernel's form
// written by hand where given, decodeACLXattr giving back the ACL (ids
// mapped, named entries sorted, a missing default mask as setfacl
// computes it), and, where the file system has POSIX ACLs, the kernel
// taking each value.
func TestACLXattr(t *testing.T) {
	shift := func(id uint32) uint32 { return id + 100000 }
	reverse := func(id uint32) uint32 { return 1000 - id }
	for _, c := range []struct {
		name  string
		dflt  bool
		mode  uint64
		acl   ACL
		idmap func(uint32) uint32
		want  []byte // nil: not checked byte by byte
		nilV  bool   // the value is nil
		back  ACL    // what decoding gives back
	}{
		{name: "access: named users and group, group object", mode: 0o100764,
			acl: ACL{Users: []ACLEntry{{1002, 6}, {1001, 4}}, Groups: []ACLEntry{{50, 1}}, GroupObj: u64(5)},
			want: kernelACL([3]uint32{aclUserObj, 7, noID}, [3]uint32{aclUser, 4, 1001}, [3]uint32{aclUser, 6, 1002},
				[3]uint32{aclGroupObj, 5, noID}, [3]uint32{aclGroup, 1, 50}, [3]uint32{aclMask, 6, noID}, [3]uint32{aclOther, 4, noID}),
			back: ACL{Users: []ACLEntry{{1001, 4}, {1002, 6}}, Groups: []ACLEntry{{50, 1}}, GroupObj: u64(5)}},
		{name: "access: named user, group object from the mode", mode: 0o40750,
			acl:  ACL{Users: []ACLEntry{{7, 7}}},
			want: kernelACL([3]uint32{aclUserObj, 7, noID}, [3]uint32{aclUser, 7, 7}, [3]uint32{aclGroupObj, 5, noID}, [3]uint32{aclMask, 5, noID}, [3]uint32{aclOther, 0, noID}),
			back: ACL{Users: []ACLEntry{{7, 7}}, GroupObj: u64(5)}},
		{name: "access: ids mapped", mode: 0o100640, idmap: shift,
			acl:  ACL{Users: []ACLEntry{{1001, 6}}, Groups: []ACLEntry{{2001, 4}, {2000, 6}}, GroupObj: u64(0)},
			back: ACL{Users: []ACLEntry{{101001, 6}}, Groups: []ACLEntry{{102000, 6}, {102001, 4}}, GroupObj: u64(0)}},
		{name: "access: none beyond the mode", mode: 0o100644, nilV: true},
		{name: "default: mask, named users and groups", dflt: true,
			acl:  ACL{Default: &ACLDefault{7, 5, 0, 7}, DefaultUsers: []ACLEntry{{1001, 7}}, DefaultGroups: []ACLEntry{{3000, 1}, {2000, 4}}},
			back: ACL{Default: &ACLDefault{7, 5, 0, 7}, DefaultUsers: []ACLEntry{{1001, 7}}, DefaultGroups: []ACLEntry{{2000, 4}, {3000, 1}}}},
		{name: "default: no mask, no named entries", dflt: true,
			acl:  ACL{Default: &ACLDefault{7, 5, 1, ACLNoMask}},
			want: kernelACL([3]uint32{aclUserObj, 7, noID}, [3]uint32{aclGroupObj, 5, noID}, [3]uint32{aclOther, 1, noID}),
			back: ACL{Default: &ACLDefault{7, 5, 1, ACLNoMask}}},
		{name: "default: named entries, no mask: union mask", dflt: true,
			acl: ACL{Default: &ACLDefault{7, 4, 0, ACLNoMask}, DefaultUsers: []ACLEntry{{7, 1}}, DefaultGroups: []ACLEntry{{8, 2}}},
			want: kernelACL([3]uint32{aclUserObj, 7, noID}, [3]uint32{aclUser, 1, 7}, [3]uint32{aclGroupObj, 4, noID}, [3]uint32{aclGroup, 2, 8},
				[3]uint32{aclMask, 7, noID}, [3]uint32{aclOther, 0, noID}),
			back: ACL{Default: &ACLDefault{7, 4, 0, 7}, DefaultUsers: []ACLEntry{{7, 1}}, DefaultGroups: []ACLEntry{{8, 2}}}},
		{name: "default: ids mapped, sorted after mapping", dflt: true, idmap: reverse,
			acl:  ACL{Default: &ACLDefault{6, 4, 4, 6}, DefaultUsers: []ACLEntry{{10, 4}, {20, 6}}},
			back: ACL{Default: &ACLDefault{6, 4, 4, 6}, DefaultUsers: []ACLEntry{{980, 6}, {990, 4}}}},
		{name: "default: named entries without base entries", dflt: true, nilV: true,
			acl: ACL{DefaultUsers: []ACLEntry{{7, 1}}}},
		{name: "default: none", dflt: true, nilV: true, acl: ACL{Users: []ACLEntry{{7, 1}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v []byte
			if c.dflt {
				v = c.acl.DefaultXattr(c.idmap)
			} else {
				v = c.acl.AccessXattr(c.mode, c.idmap)
			}
			if c.nilV {
				if v != nil {
					t.Fatalf("value %x, want nil", v)
				}
				return
			}
			if c.want != nil && !bytes.Equal(v, c.want) {
				t.Errorf("value:\n got %x\nwant %x", v, c.want)
			}
			var back ACL
			if err := decodeACLXattr(v, c.dflt, &back); err != nil || !reflect.DeepEqual(back, c.back) {
				t.Errorf("decoded: %+v %v, want %+v", back, err, c.back)
			}
			kernelTakes(t, v, c.dflt)
		})
	}
}

// kernelTakes sets v as an access ACL of a file or the default ACL of a
// directory in a temporary directory; skipped where the file system has
// no POSIX ACLs.
func kernelTakes(t *testing.T, v []byte, dflt bool) {
	p, name := filepath.Join(t.TempDir(), "f"), xattrACLAccess
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if dflt {
		p, name = filepath.Dir(p), xattrACLDefault
	}
	err := unix.Setxattr(p, name, v, 0)
	if errors.Is(err, unix.ENOTSUP) {
		t.Logf("%s: no POSIX ACLs on this file system", p)
		return
	}
	if err != nil {
		t.Errorf("kernel refuses %s %x: %v", name, v, err)
	}
}
