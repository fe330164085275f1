package mountpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnmountedAncestor: a backup's new datastore is refused at or below
// a configured mount point (fstab, a mount unit) with nothing mounted (the
// backup disk failed to mount), and allowed below a mounted one or where
// none is configured; the nearest configured mount point decides.
func TestUnmountedAncestor(t *testing.T) {
	const fstab = `# /etc/fstab
UUID=1 / ext4 defaults 0 1
UUID=2 /mnt/backup ext4 defaults,nofail 0 2
UUID=3 /srv/pbs\040store xfs defaults 0 2
UUID=4 /mnt/mounted ext4 defaults 0 2
UUID=6 /outer ext4 defaults 0 2
UUID=7 /outer/inner ext4 defaults 0 2
tmpfs /tmp tmpfs defaults 0 0
UUID=5 none swap sw 0 0
`
	const unit = `[Unit]
Description=Mount datastore 'store1' under '/mnt/datastore/store1'

[Mount]
Where=/mnt/datastore/store1
What=/dev/disk/by-uuid/1234
Type=ext4
`
	const mountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 8:17 / /mnt/mounted rw,relatime shared:2 - ext4 /dev/sdb1 rw
41 22 0:30 / /tmp rw shared:3 - tmpfs tmpfs rw
42 22 8:33 / /outer/inner rw shared:4 - ext4 /dev/sdc1 rw
`
	listed := append(Fstab(strings.NewReader(fstab)), Unit(strings.NewReader(unit)))
	mounted := Mounted(strings.NewReader(mountinfo))
	for _, c := range []struct {
		dir, want string
	}{
		{"/mnt/backup", "/mnt/backup"},
		{"/mnt/backup/ds", "/mnt/backup"},
		{"/mnt/backup/a/b/", "/mnt/backup"},
		{"/srv/pbs store/ds", "/srv/pbs store"},
		{"/mnt/datastore/store1", "/mnt/datastore/store1"},
		{"/mnt/datastore/store2", ""},
		{"/mnt/mounted/ds", ""},
		{"/outer/inner/ds", ""}, // the nearest, mounted, decides
		{"/outer/ds", "/outer"},
		{"/mnt/backupx/ds", ""},
		{"/tmp/ds", ""},
		{"/var/lib/ds", ""},
		{"/", ""},
	} {
		if got := UnmountedAncestor(c.dir, listed, mounted); got != c.want {
			t.Errorf("UnmountedAncestor(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
	// Paths are compared with their links resolved: a link into a mount
	// point is the mount point.
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if got := ResolvePath(filepath.Join(dir, "link", "new", "ds")); got != filepath.Join(ResolvePath(real), "new", "ds") {
		t.Errorf("resolvePath through a link: %q", got)
	}
}
