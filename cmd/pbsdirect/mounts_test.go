package main

import (
	"strings"
	"testing"
)

// TestUnmountedAncestor: a backup's new datastore is refused at or below
// a mount point of /etc/fstab with nothing mounted (the backup disk failed
// to mount), and allowed below a mounted one or where fstab names none.
func TestUnmountedAncestor(t *testing.T) {
	const fstab = `# /etc/fstab
UUID=1 / ext4 defaults 0 1
UUID=2 /mnt/backup ext4 defaults,nofail 0 2
UUID=3 /srv/pbs\040store xfs defaults 0 2
UUID=4 /mnt/mounted ext4 defaults 0 2
tmpfs /tmp tmpfs defaults 0 0
UUID=5 none swap sw 0 0
`
	const mountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 8:17 / /mnt/mounted rw,relatime shared:2 - ext4 /dev/sdb1 rw
41 22 0:30 / /tmp rw shared:3 - tmpfs tmpfs rw
`
	for _, c := range []struct {
		dir, want string
	}{
		{"/mnt/backup", "/mnt/backup"},
		{"/mnt/backup/ds", "/mnt/backup"},
		{"/mnt/backup/a/b/", "/mnt/backup"},
		{"/srv/pbs store/ds", "/srv/pbs store"},
		{"/mnt/mounted/ds", ""},
		{"/mnt/backupx/ds", ""},
		{"/tmp/ds", ""},
		{"/var/lib/ds", ""},
		{"/", ""},
	} {
		if got := unmountedAncestor(c.dir, strings.NewReader(fstab), strings.NewReader(mountinfo)); got != c.want {
			t.Errorf("unmountedAncestor(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
}
