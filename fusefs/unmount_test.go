package fusefs

import (
	"strings"
	"testing"
)

// TestFuseMountPoint reads mount points, escaped as mountinfo escapes
// them, and tells FUSE mounts from others.
func TestFuseMountPoint(t *testing.T) {
	const table = `22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw
90 22 0:50 / /mnt/a\040b rw,nosuid,nodev master:3 - fuse.pbsdirect pbsdirect:vm/100 rw,user_id=0
91 22 0:51 / /mnt/plain rw - ext4 /dev/sda1 rw
`
	for _, c := range []struct {
		dir  string
		want bool
	}{{"/mnt/a b", true}, {"/mnt/plain", false}, {"/mnt/none", false}, {`/mnt/a\040b`, false}} {
		got, err := fuseMountPoint(strings.NewReader(table), c.dir)
		if err != nil || got != c.want {
			t.Errorf("fuseMountPoint(%q) = %v, %v; want %v", c.dir, got, err, c.want)
		}
	}
}
