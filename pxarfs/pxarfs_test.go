package pxarfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/pxarfs"
)

// testTree is a tree with nested directories, a multi-MiB file, a small
// file with xattrs, a symlink, a hardlink, a FIFO, a device node, a
// directory with ACLs and a directory of 2,000 entries.
func testTree() (root *pxar.Node, big, small, deep []byte) {
	big = fixture.Mixed(3<<20+123, 7)
	small = []byte("small file content\n")
	deep = []byte("deep down\n")
	md := func(mode uint64, uid, gid uint32, sec int64, ns uint32) pxar.Metadata {
		return pxar.Metadata{Mode: mode, UID: uid, GID: gid, MTimeSec: sec, MTimeNsec: ns}
	}
	many := &pxar.Node{Name: "many", Kind: pxar.KindDir, Metadata: md(0o755, 0, 0, 1700000000, 0)}
	for i := range 2000 {
		many.Children = append(many.Children, &pxar.Node{Name: fmt.Sprintf("f%04d", i), Kind: pxar.KindFile, Data: []byte(fmt.Sprint(i)), Metadata: md(0o644, 0, 0, 1700000000, 0)})
	}
	groupObj := uint64(5)
	acl := &pxar.Node{Name: "acl", Kind: pxar.KindDir, Metadata: md(0o2770, 0, 100, 1700000000, 0)}
	acl.ACL = pxar.ACL{
		Users:        []pxar.ACLEntry{{ID: 1002, Permissions: 6}, {ID: 1001, Permissions: 4}},
		GroupObj:     &groupObj,
		Default:      &pxar.ACLDefault{UserObj: 7, GroupObj: 5, Other: 0, Mask: 7},
		DefaultUsers: []pxar.ACLEntry{{ID: 1001, Permissions: 7}},
	}
	root = &pxar.Node{Kind: pxar.KindDir, Metadata: md(0o755, 0, 0, 1700000000, 0), Children: []*pxar.Node{
		{Name: "a", Kind: pxar.KindDir, Metadata: md(0o750, 1000, 1000, 1700000001, 0), Children: []*pxar.Node{
			{Name: "b", Kind: pxar.KindDir, Metadata: md(0o755, 0, 0, 1700000002, 0), Children: []*pxar.Node{
				{Name: "c", Kind: pxar.KindDir, Metadata: md(0o755, 0, 0, 1700000003, 0), Children: []*pxar.Node{
					{Name: "deep.txt", Kind: pxar.KindFile, Data: deep, Metadata: md(0o600, 33, 34, 1700000004, 5)},
				}},
			}},
		}},
		acl,
		{Name: "big.bin", Kind: pxar.KindFile, Data: big, Metadata: md(0o644, 1000, 100, 1712345678, 123456789)},
		{Name: "fifo", Kind: pxar.KindFIFO, Metadata: md(0o600, 0, 0, 1700000000, 0)},
		{Name: "hard", Kind: pxar.KindHardlink, LinkTarget: "big.bin"},
		{Name: "link", Kind: pxar.KindSymlink, LinkTarget: "a/b/c/deep.txt", Metadata: md(0o777, 0, 0, 1700000000, 0)},
		many,
		{Name: "null", Kind: pxar.KindDevice, Device: pxar.Device{Major: 1, Minor: 3}, Metadata: md(0o666, 0, 0, 1700000000, 0)},
		{Name: "small.txt", Kind: pxar.KindFile, Data: small, Metadata: func() pxar.Metadata {
			m := md(0o640, 1000, 1000, 1700000005, 999999999)
			m.Xattrs = []pxar.Xattr{{Name: []byte("user.comment"), Value: []byte("hello")}}
			return m
		}()},
	}}
	return root, big, small, deep
}

// mount mounts tree at a fresh directory as root.pxar/, or skips without
// FUSE (fails when CI is set).
func mount(t *testing.T, tree fusefs.DirNode) string {
	t.Helper()
	dir := t.TempDir()
	m, err := fusefs.New(dir, []fusefs.File{{Name: "root.pxar", Node: tree}}, fusefs.Options{FsName: "test", Log: func(s string) { t.Log(s) }})
	if err != nil {
		if errors.Is(err, fusefs.ErrUnavailable) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		m.Wait()
	})
	return filepath.Join(dir, "root.pxar")
}

// TestBrowse mounts a pxar archive written into a datastore, legacy and
// split, plain and encrypted, and reads it through the file system:
// contents byte-exact, attributes, symlinks, hardlinks, special files,
// xattrs and ACLs, a large directory, a deep path; reading one small
// file fetches only a chunk or two.
func TestBrowse(t *testing.T) {
	for _, c := range []struct {
		name       string
		split, enc bool
	}{
		{"legacy", false, false},
		{"legacy-encrypted", false, true},
		{"split", true, false},
		{"split-encrypted", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, big, small, deep := testTree()
			store := fixture.NewStore(t)
			snap := fixture.Snap(t, "", "ct", "200", fixture.T0)
			o := fixture.PxarOptions{Split: c.split, Seed: 3}
			if c.enc {
				_, o.Key = fixture.Key(t, 3)
			}
			names := fixture.PxarSnapshot(t, store, snap, root, o)
			m := fixture.Manifest(t, store, snap)
			open := func(name string) *archive.Reader {
				r, err := archive.Open(context.Background(), fixture.OpenStore(t, store), snap.Dir(), m, name, o.Key, archive.Options{Fetchers: 1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			}
			meta := open(names[0])
			content := meta // the reader file contents come from
			var pr io.ReaderAt
			var ps int64
			if c.split {
				content = open(names[1])
				pr, ps = content, content.Size()
			}
			a, err := pxar.Open(meta, meta.Size(), pr, ps)
			if err != nil {
				t.Fatal(err)
			}
			mnt := mount(t, pxarfs.Root(a))

			// One small file: stat it (its lookups), then read it.
			p := filepath.Join(mnt, "a", "b", "c", "deep.txt")
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			sys := st.Sys().(*syscall.Stat_t)
			if st.Mode().Perm() != 0o600 || sys.Uid != 33 || sys.Gid != 34 || st.Size() != int64(len(deep)) ||
				st.ModTime().Unix() != 1700000004 || st.ModTime().Nanosecond() != 5 {
				t.Errorf("deep.txt: mode %v uid %d gid %d size %d mtime %v", st.Mode(), sys.Uid, sys.Gid, st.Size(), st.ModTime())
			}
			before := content.Stats().Fetched.Load() - content.Stats().ReadAhead.Load()
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, deep) {
				t.Errorf("deep.txt: %q %v", got, err)
			}
			if n := content.Stats().Fetched.Load() - content.Stats().ReadAhead.Load() - before; n > 2 {
				t.Errorf("reading a %d-byte file fetched %d chunks", len(deep), n)
			}

			// The hardlink, once met, counts in its target's link count.
			hst, err := os.Stat(filepath.Join(mnt, "hard"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(mnt, "big.bin"))
			if err != nil || !bytes.Equal(got, big) {
				t.Errorf("big.bin: %d bytes, %v; equal %v", len(got), err, bytes.Equal(got, big))
			}
			st, err = os.Stat(filepath.Join(mnt, "big.bin"))
			if err != nil {
				t.Fatal(err)
			}
			sys = st.Sys().(*syscall.Stat_t)
			if st.Mode() != 0o644 || sys.Uid != 1000 || sys.Gid != 100 || st.Size() != int64(len(big)) ||
				st.ModTime().Unix() != 1712345678 || st.ModTime().Nanosecond() != 123456789 || sys.Nlink != 2 {
				t.Errorf("big.bin: mode %v uid %d gid %d size %d mtime %v nlink %d", st.Mode(), sys.Uid, sys.Gid, st.Size(), st.ModTime(), sys.Nlink)
			}
			if hst.Sys().(*syscall.Stat_t).Ino != sys.Ino || hst.Size() != int64(len(big)) {
				t.Errorf("hard: %v, want the inode of big.bin", hst)
			}
			if got, err := os.ReadFile(filepath.Join(mnt, "hard")); err != nil || !bytes.Equal(got, big) {
				t.Errorf("hard: %d bytes, %v", len(got), err)
			}
			if got, err := os.ReadFile(filepath.Join(mnt, "small.txt")); err != nil || !bytes.Equal(got, small) {
				t.Errorf("small.txt: %q %v", got, err)
			}

			if target, err := os.Readlink(filepath.Join(mnt, "link")); err != nil || target != "a/b/c/deep.txt" {
				t.Errorf("readlink: %q %v", target, err)
			}
			if got, err := os.ReadFile(filepath.Join(mnt, "link")); err != nil || !bytes.Equal(got, deep) {
				t.Errorf("through the symlink: %q %v", got, err)
			}
			if st, err := os.Lstat(filepath.Join(mnt, "fifo")); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("fifo: %v %v", st, err)
			}
			if st, err := os.Lstat(filepath.Join(mnt, "null")); err != nil || st.Mode()&os.ModeCharDevice == 0 ||
				unix.Major(st.Sys().(*syscall.Stat_t).Rdev) != 1 || unix.Minor(st.Sys().(*syscall.Stat_t).Rdev) != 3 {
				t.Errorf("null: %v %v", st, err)
			}
			if st, err := os.Stat(filepath.Join(mnt, "a")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
				t.Errorf("a: %v %v", st, err)
			}

			ents, err := os.ReadDir(filepath.Join(mnt, "many"))
			if err != nil || len(ents) != 2000 {
				t.Fatalf("many: %d entries, %v", len(ents), err)
			}
			for i, e := range ents {
				if e.Name() != fmt.Sprintf("f%04d", i) || !e.Type().IsRegular() {
					t.Fatalf("many: entry %d is %q (%v)", i, e.Name(), e.Type())
				}
			}
			if got, err := os.ReadFile(filepath.Join(mnt, "many", "f1234")); err != nil || string(got) != "1234" {
				t.Errorf("many/f1234: %q %v", got, err)
			}
			top, err := os.ReadDir(mnt)
			var tnames []string
			for _, e := range top {
				tnames = append(tnames, e.Name())
			}
			if want := []string{"a", "acl", "big.bin", "fifo", "hard", "link", "many", "null", "small.txt"}; err != nil || !slices.Equal(tnames, want) {
				t.Errorf("root: %q %v, want %q", tnames, err, want)
			}
			if _, err := os.Stat(filepath.Join(mnt, "a", "nothing")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a missing name: %v, want ENOENT", err)
			}

			buf := make([]byte, 64)
			if n, err := unix.Getxattr(filepath.Join(mnt, "small.txt"), "user.comment", buf); err != nil || string(buf[:n]) != "hello" {
				t.Errorf("getxattr user.comment: %q %v", buf[:max(n, 0)], err)
			}
			if n, err := unix.Listxattr(filepath.Join(mnt, "small.txt"), buf); err != nil || string(buf[:n]) != "user.comment\x00" {
				t.Errorf("listxattr: %q %v", buf[:max(n, 0)], err)
			}
			if _, err := unix.Getxattr(filepath.Join(mnt, "big.bin"), "user.comment", buf); !errors.Is(err, unix.ENODATA) {
				t.Errorf("getxattr of a missing xattr: %v, want ENODATA", err)
			}
			for _, x := range []struct {
				name string
				want []byte
			}{
				{"system.posix_acl_access", root.Children[1].ACL.AccessXattr(0o2770, nil)},
				{"system.posix_acl_default", root.Children[1].ACL.DefaultXattr(nil)},
			} {
				b := make([]byte, 256)
				n, err := unix.Getxattr(filepath.Join(mnt, "acl"), x.name, b)
				if err != nil || !bytes.Equal(b[:n], x.want) {
					t.Errorf("getxattr %s: %x %v, want %x", x.name, b[:max(n, 0)], err, x.want)
				}
			}
			// The kernel takes the form: getfacl decodes it.
			if _, err := exec.LookPath("getfacl"); err == nil {
				out, err := exec.Command("getfacl", "-n", filepath.Join(mnt, "acl")).CombinedOutput()
				for _, want := range []string{"user:1001:r--", "user:1002:rw-", "group::r-x", "mask::rwx", "default:user:1001:rwx", "default:mask::rwx"} {
					if err != nil || !strings.Contains(string(out), want) {
						t.Errorf("getfacl: %v, want %q in:\n%s", err, want, out)
						break
					}
				}
			}
		})
	}
}
