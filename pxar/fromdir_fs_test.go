package pxar

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// names returns the paths of the tree below n, slash-joined.
func names(n *Node, p string) []string {
	var out []string
	for _, c := range n.Children {
		cp := strings.TrimPrefix(p+"/"+c.Name, "/")
		out = append(out, cp)
		out = append(out, names(c, cp)...)
	}
	return out
}

// TestTreeFromDirOneFileSystem: a mount point below the root is stored as
// an empty directory with its own metadata, counted and named; with
// IncludeDev naming it, its contents are read.
func TestTreeFromDirOneFileSystem(t *testing.T) {
	root := t.TempDir()
	mp := filepath.Join(root, "m")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("none", mp, "tmpfs", 0, "mode=0711"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mp, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mp, "inner"), []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "outer"), []byte("o"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st TreeStats
	tree, err := TreeFromDirOpts(root, DirOptions{}, &st)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tree, ""); !slices.Equal(got, []string{"m", "outer"}) {
		t.Errorf("tree %q, want m (empty) and outer", got)
	}
	for _, c := range tree.Children {
		if c.Name == "m" && (c.Kind != KindDir || c.Mode&0o7777 != 0o711) {
			t.Errorf("mount point stored as kind %d mode %o, want a directory with its mode 711", c.Kind, c.Mode&0o7777)
		}
	}
	if st.OtherFS != 1 || len(st.OtherFSSample) != 1 || !strings.Contains(st.OtherFSSample[0], mp) {
		t.Errorf("OtherFS %d %q, want 1 naming %s", st.OtherFS, st.OtherFSSample, mp)
	}
	tree, err = TreeFromDirOpts(root, DirOptions{IncludeDev: []string{mp}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tree, ""); !slices.Equal(got, []string{"m", "m/inner", "outer"}) {
		t.Errorf("with IncludeDev: tree %q, want m/inner too", got)
	}
}

// TestTreeFromDirSkip: a file named by DirOptions.Skip (by device and
// inode) is left out wherever it is, and named in TreeStats.Skipped.
func TestTreeFromDirSkip(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "a", "store")
	if err := os.MkdirAll(filepath.Join(store, ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var sb unix.Stat_t
	if err := unix.Stat(store, &sb); err != nil {
		t.Fatal(err)
	}
	var st TreeStats
	tree, err := TreeFromDirOpts(root, DirOptions{Skip: []FileID{{uint64(sb.Dev), sb.Ino}}}, &st)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tree, ""); !slices.Equal(got, []string{"a", "a/keep"}) {
		t.Errorf("tree %q, want the store left out", got)
	}
	if len(st.Skipped) != 1 || !strings.Contains(st.Skipped[0], store) {
		t.Errorf("Skipped %q, want %s", st.Skipped, store)
	}
}

// TestTreeFromDirFileChanged: a file that shrank between listing and
// encoding fails the encoding with ErrFileChanged, naming the file.
func TestTreeFromDirFileChanged(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "live")
	if err := os.WriteFile(f, bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	tree, err := TreeFromDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f, 2); err != nil {
		t.Fatal(err)
	}
	err = Encode(new(bytes.Buffer), nil, tree)
	if !errors.Is(err, ErrFileChanged) || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "changed during the backup") {
		t.Errorf("encoding a file that shrank: %v, want ErrFileChanged naming %s", err, f)
	}
}
