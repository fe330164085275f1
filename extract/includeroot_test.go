package extract

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExtractIncludeRootMetadata: with Include, DIR gets the archive root's
// owner, mode (without the bits the root-mode rule leaves out) and times
// exactly as a full extraction gives them, whether DIR is created by the
// run or exists already (empty, or not empty with Force).
func TestExtractIncludeRootMetadata(t *testing.T) {
	root := dir("", dir("sub", file("f", "x")), file("top", "t"))
	root.Mode = 0o2775 // setgid and group write: left out of DIR
	root.UID, root.GID = 1234, 5678
	root.MTimeSec, root.MTimeNsec = 1500000000, 42
	meta, _ := encode(t, root, false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, d string) // nil: DIR is created by the run
		force bool
	}{
		{"new", nil, false},
		{"existing empty", func(t *testing.T, d string) {
			if err := os.Mkdir(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"existing with Force", func(t *testing.T, d string) {
			if err := os.Mkdir(d, 0o711); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "kept"), []byte("k"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stat := func(include []string) (unix.Stat_t, int64) {
				d := filepath.Join(t.TempDir(), "out")
				if c.setup != nil {
					c.setup(t, d)
				}
				rep, err := Run(context.Background(), a, d, Options{Force: c.force, Include: include})
				if err != nil {
					t.Fatalf("include %q: %v", include, err)
				}
				var st unix.Stat_t
				if err := unix.Stat(d, &st); err != nil {
					t.Fatal(err)
				}
				return st, rep.Warnings
			}
			full, fullWarn := stat(nil)
			if full.Mode&0o7777 != 0o755 || full.Mtim.Sec != 1500000000 || full.Mtim.Nsec != 42 {
				t.Fatalf("full extraction: DIR mode %#o mtime %d.%09d", full.Mode&0o7777, full.Mtim.Sec, full.Mtim.Nsec)
			}
			for _, include := range [][]string{{"sub/f"}, {"top", "sub"}, {"/"}} {
				got, warn := stat(include)
				if got.Mode != full.Mode || got.Mtim != full.Mtim || got.Uid != full.Uid || got.Gid != full.Gid {
					t.Errorf("include %q: DIR mode %#o mtime %d.%09d owner %d:%d, full extraction's %#o %d.%09d %d:%d", include,
						got.Mode&0o7777, got.Mtim.Sec, got.Mtim.Nsec, got.Uid, got.Gid,
						full.Mode&0o7777, full.Mtim.Sec, full.Mtim.Nsec, full.Uid, full.Gid)
				}
				if warn != fullWarn {
					t.Errorf("include %q: %d warnings, full extraction %d", include, warn, fullWarn)
				}
			}
		})
	}
}
