package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// cliBinary copies the test binary where every user may run it and returns
// a command running it as pbsdirect (runAsCLI) with args, as user nobody
// (setpriv): root passes every permission check, so these tests drop it.
func cliAsNobody(t *testing.T) func(args ...string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		fixture.SkipOrFail(t, "setpriv (util-linux) not available: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := openDir(t)
	bin := filepath.Join(dir, "pbsdirect")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (int, string) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		cmd.Env = append(os.Environ(), runAsCLI+"=1", "HOME=/nonexistent", "XDG_CONFIG_HOME=/nonexistent")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
}

// openDir returns a new directory that every user may enter and read (the
// path to it included).
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPermissionDenied: run as a user who may not read the datastore (its
// root 0700, or .chunks 0750, owned by root) or write the target
// directory, pbsdirect says "permission denied" with the path, before the
// work, exits 3 (a cause outside the data), and never says that the
// directory is no datastore.
func TestPermissionDenied(t *testing.T) {
	asNobody := cliAsNobody(t)
	base := openDir(t)
	store := filepath.Join(base, "store")
	fixture.CopyDir(t, fixture.NewStore(t), store)
	backupImage(t, store, zeroMiddle(29))
	for _, d := range []string{store, filepath.Join(store, "vm"), filepath.Join(store, "vm", "100")} {
		os.Chmod(d, 0o755)
	}
	filepath.WalkDir(store, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			os.Chmod(p, 0o644)
		} else if err == nil && de.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	out := openDir(t)
	os.Chmod(out, 0o777) // nobody may create the target here
	closed := openDir(t)
	os.Chmod(closed, 0o755) // root-owned: nobody may not create files in it

	for _, c := range []struct {
		name  string
		prep  func()
		args  []string
		words []string
	}{
		{"root-0700", func() { os.Chmod(store, 0o700) }, []string{"restore", "--store", store, snap0, "drive-scsi0", filepath.Join(out, "a.raw")},
			[]string{store, "permission denied"}},
		{"chunks-0750", func() { os.Chmod(store, 0o755); os.Chmod(filepath.Join(store, ".chunks"), 0o750) },
			[]string{"restore", "--store", store, snap0, "drive-scsi0", filepath.Join(out, "b.raw")},
			[]string{filepath.Join(store, ".chunks"), "permission denied"}},
		{"target-directory", func() { os.Chmod(filepath.Join(store, ".chunks"), 0o755) },
			[]string{"restore", "--store", store, snap0, "drive-scsi0", filepath.Join(closed, "c.raw")},
			[]string{filepath.Join(closed, "c.raw"), "permission denied"}},
		{"verify-root-0700", func() { os.Chmod(store, 0o700) }, []string{"verify", "--store", store},
			[]string{store, "permission denied"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.prep()
			code, msg := asNobody(c.args...)
			if code != 3 { // outside the data: permissions
				t.Fatalf("exit %d, want 3: %s", code, msg)
			}
			for _, w := range c.words {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q: %s", w, msg)
				}
			}
			for _, bad := range []string{"not a PBS datastore", "no .chunks", "partial", "verified and synced"} {
				if strings.Contains(msg, bad) {
					t.Errorf("message says %q: %s", bad, msg)
				}
			}
		})
	}
	os.Chmod(store, 0o755)
}
