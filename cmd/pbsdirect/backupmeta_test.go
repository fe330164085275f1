package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// metaDump describes the tree at dir for comparison: each entry's path,
// mode and its user.*, trusted.*, security.capability and POSIX ACL
// xattrs (names sorted, values in hex).
func metaDump(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %o\n", rel, st.Mode)
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		buf := make([]byte, 64<<10)
		n, err := unix.Llistxattr(p, buf)
		if err != nil {
			return err
		}
		names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
		slices.Sort(names)
		for _, name := range names {
			if !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") && !strings.HasPrefix(name, "system.posix_acl_") && name != "security.capability" {
				continue
			}
			v := make([]byte, 64<<10)
			m, err := unix.Lgetxattr(p, name, v)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", p, name, err)
			}
			fmt.Fprintf(&b, "  %s=%s\n", name, hex.EncodeToString(v[:m]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// getfacl returns getfacl's listing of the tree at dir, paths relative.
func getfacl(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("getfacl", "-R", "-n", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("getfacl %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

// TestBackupPxarMeta backs up a tree with user xattrs, an access ACL
// whose mask is narrower than its group entry, a default ACL and a file
// capability, legacy and split; restored into a directory, and through
// --format tar into GNU tar, the tree has the same modes, xattrs, ACLs
// (getfacl) and capability as the source. The report counts them. A
// symlink to a directory as the source is followed; a regular file is
// refused, saying what it is.
func TestBackupPxarMeta(t *testing.T) {
	for _, tool := range []string{"setfacl", "getfacl", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sh := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "d"), 0o750))
	f, ping := filepath.Join(src, "f.txt"), filepath.Join(src, "ping")
	must(os.WriteFile(f, []byte("acl'd\n"), 0o640))
	must(os.WriteFile(ping, []byte("#!/bin/true\n"), 0o755))
	must(os.Symlink("f.txt", filepath.Join(src, "link")))
	if err := unix.Lsetxattr(f, "user.comment", []byte("kept"), 0); errors.Is(err, unix.ENOTSUP) {
		t.Skipf("%s: no user xattrs on this file system", tmp)
	} else {
		must(err)
	}
	if out, err := exec.Command("setfacl", "-m", "u:1234:rwx,g::r-x,m::r--", f).CombinedOutput(); err != nil {
		t.Skipf("%s: no POSIX ACLs here: %v %s", tmp, err, out)
	}
	sh("setfacl", "-d", "-m", "u:1234:r-x,g:2345:rwx", filepath.Join(src, "d"))
	must(os.Mkdir(filepath.Join(src, "d/sub"), 0o750)) // inherits d's default ACL as its access and default ACL
	must(os.WriteFile(filepath.Join(src, "d/sub/inherit"), []byte("x"), 0o644))
	// VFS_CAP_REVISION_2, effective, cap_net_raw permitted.
	caps := append([]byte{1, 0, 0, 2, 0, 0x20, 0, 0}, make([]byte, 12)...)
	withCaps := unix.Lsetxattr(ping, "security.capability", caps, 0) == nil
	want := backupSummary{XattrEntries: 1, ACLEntries: 4} // f.txt access; d default; d/sub access+default; inherit access
	if withCaps {
		want.FCapsEntries = 1
	} else {
		t.Logf("no file capabilities set here: not checked")
	}
	if got := metaDump(t, src); !strings.Contains(got, "user.comment") || !strings.Contains(got, "system.posix_acl_default") {
		t.Fatalf("source lacks its metadata:\n%s", got)
	}
	// The source through a symlink to it (followed, that one only).
	link := filepath.Join(tmp, "srclink")
	must(os.Symlink(src, link))
	store := fixture.NewStore(t)
	for i, format := range []string{"legacy", "split"} {
		btime := fmt.Sprintf("2026-11-29T1%d:00:00Z", i)
		r := mustOK(t, "backup", "--store", store, "--output-format", "json", "--backup-type", "host", "--backup-id", "h",
			"--backup-time", btime, "--pxar-format", format, "root.pxar:"+link)
		var s backupSummary
		must(json.Unmarshal([]byte(r.out), &s))
		if s.XattrEntries != want.XattrEntries || s.ACLEntries != want.ACLEntries || s.FCapsEntries != want.FCapsEntries || s.MetaUnread != 0 {
			t.Errorf("%s: counts %d xattrs, %d ACLs, %d fcaps, %d unread; want %d, %d, %d, 0", format,
				s.XattrEntries, s.ACLEntries, s.FCapsEntries, s.MetaUnread, want.XattrEntries, want.ACLEntries, want.FCapsEntries)
		}
		snap := "host/h/" + btime
		dst := filepath.Join(tmp, format+"-dir")
		mustOK(t, "restore", "--store", store, snap, "root.pxar", dst)
		if got, want := metaDump(t, dst), metaDump(t, src); got != want {
			t.Errorf("%s: restored tree differs:\n%s\nsource:\n%s", format, got, want)
		}
		if got, want := getfacl(t, dst), getfacl(t, src); got != want {
			t.Errorf("%s: restored getfacl differs:\n%s\nsource:\n%s", format, got, want)
		}
		tr := mustOK(t, "restore", "--store", store, snap, "root.pxar", "-", "--format", "tar")
		dtar := filepath.Join(tmp, format+"-tar")
		must(os.Mkdir(dtar, 0o700))
		cmd := exec.Command("tar", "--xattrs", "--xattrs-include=*", "--acls", "-xpf", "-", "-C", dtar)
		cmd.Stdin = bytes.NewReader([]byte(tr.out))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: tar: %v\n%s", format, err, out)
		}
		must(os.Chmod(dtar, 0o750)) // the top directory is tar's own, its ACL none
		if got, want := metaDump(t, dtar), metaDump(t, src); got != want {
			t.Errorf("%s: tar-extracted tree differs:\n%s\nsource:\n%s", format, got, want)
		}
		if got, want := getfacl(t, dtar), getfacl(t, src); got != want {
			t.Errorf("%s: tar-extracted getfacl differs:\n%s\nsource:\n%s", format, got, want)
		}
	}
	r := mustOK(t, "backup", "--store", store, "--backup-type", "host", "--backup-id", "h", "--backup-time", "2026-11-29T15:00:00Z", "root.pxar:"+src)
	if !strings.Contains(r.out, fmt.Sprintf("pxar metadata stored: 1 entries with xattrs, 4 with ACLs, %d with file capabilities", want.FCapsEntries)) {
		t.Errorf("text report lacks the metadata counts: %v", r)
	}
	mustFail(t, 2, []string{f + " is a regular file, not a directory"}, "backup", "--store", store, "root.pxar:"+f)
}
