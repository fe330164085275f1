package backends

import (
	"testing"

	"golang.org/x/sys/unix"
)

// bindMount bind-mounts src on dst for the test, unmounted after; false
// when the test may not mount (not root, no mount namespace).
func bindMount(t *testing.T, src, dst string) bool {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Logf("no bind mount (%v): that case left out", err)
		return false
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	return true
}
