package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReplace: the file is replaced, another name of the old one keeps
// its content, no temporary file is left, and the mode of the replaced
// file is kept.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("replaced file holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "other")); string(b) != "old" {
		t.Errorf("the other name holds %q, want the old content", b)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600 kept", st.Mode(), err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".pbsdirect-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestReplaceRefused: something that is not a regular file is refused and
// left as it is; a path that cannot take a file, and a failed write, are
// told apart by class, with the temporary name left out.
func TestReplaceRefused(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "null")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	err := Replace(link, []byte("x"))
	if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "is a symbolic link, not a regular file: not replaced") {
		t.Errorf("link: %v", err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st, err)
	}
	err = Replace(filepath.Join(dir, "missing", "r.json"), []byte("x"))
	if !errors.Is(err, ErrUnusable) || errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "cannot write a file there") {
		t.Errorf("missing directory: %v", err)
	}
	tmp := filepath.Join(dir, ".pbsdirect-1.tmp")
	err = WriteError(filepath.Join(dir, "r.json"), &fs.PathError{Op: "write", Path: tmp, Err: syscall.ENOSPC})
	if !errors.Is(err, ErrWrite) || errors.Is(err, ErrUnusable) || !errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), tmp) {
		t.Errorf("no space: %v", err)
	}
}
