package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
)

func u64p(v uint64) *uint64 { return &v }

func file(name, data string) *pxar.Node {
	return &pxar.Node{Name: name, Kind: pxar.KindFile, Metadata: pxar.Metadata{Mode: 0o644, UID: 1000, GID: 1001, MTimeSec: 1700000000, MTimeNsec: 123456789}, Data: []byte(data)}
}

func dir(name string, kids ...*pxar.Node) *pxar.Node {
	return &pxar.Node{Name: name, Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755, UID: 1000, GID: 1000, MTimeSec: 1600000000, MTimeNsec: 5}, Children: kids}
}

// fullTree has every entry kind and attribute extraction sets.
func fullTree() *pxar.Node {
	big := make([]byte, 3<<20+77)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		if i < 1<<20 || i > 2<<20 { // a zero MiB in the middle: a hole
			big[i] = byte(r.Uint32())
		}
	}
	attrs := file("attrs", "with attributes")
	attrs.Mode = 0o4755 // setuid survives the chown
	attrs.UID, attrs.GID = 4242, 4343
	attrs.MTimeSec, attrs.MTimeNsec = -305112601, 999000000
	attrs.Xattrs = []pxar.Xattr{{Name: []byte("user.empty"), Value: []byte{}}, {Name: []byte("user.one"), Value: []byte("value\x00bin")},
		{Name: []byte("trusted.t"), Value: []byte("root only")}}
	attrs.Mode = 0o4754
	attrs.ACL = pxar.ACL{Users: []pxar.ACLEntry{{ID: 1001, Permissions: 6}, {ID: 1002, Permissions: 4}}, Groups: []pxar.ACLEntry{{ID: 2001, Permissions: 5}}}
	attrs.ACL.GroupObj = u64p(4)
	// VFS_CAP_REVISION_2 with CAP_NET_BIND_SERVICE permitted, effective.
	caps := make([]byte, 20)
	binary.LittleEndian.PutUint32(caps, 0x02000001)
	binary.LittleEndian.PutUint32(caps[4:], 1<<10)
	bin := file("ping", "\x7fELF")
	bin.Mode = 0o755
	bin.FCaps = caps
	dacl := dir("defacl")
	dacl.ACL = pxar.ACL{Default: &pxar.ACLDefault{UserObj: 7, GroupObj: 5, Other: 0, Mask: 7}, DefaultUsers: []pxar.ACLEntry{{ID: 1001, Permissions: 7}}, DefaultGroups: []pxar.ACLEntry{{ID: 3000, Permissions: 1}}}
	dacl.Children = []*pxar.Node{file("inside", "i")}
	ro := dir("readonly", file("f", "in a 0555 directory"))
	ro.Mode = 0o555
	deep := dir("d0")
	cur := deep
	for i := 1; i < 100; i++ {
		n := dir(fmt.Sprint("d", i))
		cur.Children = []*pxar.Node{n}
		cur = n
	}
	cur.Children = []*pxar.Node{file("bottom", "deep")}
	root := dir("",
		file("plain", "hello"),
		file("zero", ""),
		&pxar.Node{Name: "big", Kind: pxar.KindFile, Metadata: pxar.Metadata{Mode: 0o600, MTimeSec: 1}, Size: uint64(len(big)),
			Content: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(big)), nil }},
		dir("with space ünïcødé ☃",
			file("line\nbreak", "nl"),
			file(strings.Repeat("n", 255), "long name"),
			dir("empty"),
		),
		&pxar.Node{Name: "link", Kind: pxar.KindSymlink, Metadata: pxar.Metadata{Mode: 0o777, UID: 7, GID: 8, MTimeSec: 1234}, LinkTarget: "../target with space/é"},
		&pxar.Node{Name: "out", Kind: pxar.KindSymlink, Metadata: pxar.Metadata{Mode: 0o777}, LinkTarget: "/etc/passwd"},
		&pxar.Node{Name: "zz-hardlink", Kind: pxar.KindHardlink, LinkTarget: "with space ünïcødé ☃/line\nbreak"},
		&pxar.Node{Name: "null", Kind: pxar.KindDevice, Metadata: pxar.Metadata{Mode: 0o666, MTimeSec: 99}, Device: pxar.Device{Major: 1, Minor: 3}},
		&pxar.Node{Name: "sda", Kind: pxar.KindDevice, Metadata: pxar.Metadata{Mode: 0o060000 | 0o660, GID: 6}, Device: pxar.Device{Major: 8, Minor: 0x12345}},
		&pxar.Node{Name: "fifo", Kind: pxar.KindFIFO, Metadata: pxar.Metadata{Mode: 0o600, MTimeSec: 5}},
		&pxar.Node{Name: "sock", Kind: pxar.KindSocket, Metadata: pxar.Metadata{Mode: 0o755}},
		attrs, bin, dacl, ro, deep,
	)
	root.Mode = 0o750
	return root
}

// encode returns the archive of root, legacy or split.
func encode(t testing.TB, root *pxar.Node, split bool) (meta, payload []byte) {
	t.Helper()
	var m, p bytes.Buffer
	var pw io.Writer
	if split {
		pw = &p
	}
	if err := pxar.Encode(&m, pw, root); err != nil {
		t.Fatal(err)
	}
	if split {
		return m.Bytes(), p.Bytes()
	}
	return m.Bytes(), nil
}

func open(t testing.TB, meta, payload []byte) (*pxar.Archive, error) {
	t.Helper()
	if payload == nil {
		return pxar.Open(bytes.NewReader(meta), int64(len(meta)), nil, 0)
	}
	return pxar.Open(bytes.NewReader(meta), int64(len(meta)), bytes.NewReader(payload), int64(len(payload)))
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: owners, device nodes, trusted.* xattrs")
	}
}

// TestExtractTree extracts a tree with every entry kind, legacy and split,
// and compares every attribute.
func TestExtractTree(t *testing.T) {
	needRoot(t)
	for _, split := range []bool{false, true} {
		for _, shift := range []uint32{0, 100000} {
			t.Run(fmt.Sprintf("split=%v/map-ids=%d", split, shift), func(t *testing.T) {
				meta, payload := encode(t, fullTree(), split)
				a, err := open(t, meta, payload)
				if err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join(t.TempDir(), "out")
				var progress int64
				rep, err := Run(context.Background(), a, dir, Options{MapIDs: shift, Progress: func(n int64) { progress = n }})
				if err != nil {
					t.Fatal(err)
				}
				fixture.PxarTreeEqual(t, a, dir, shift)
				if rep.Files != 10 || rep.Dirs != 104 {
					t.Errorf("report %+v", rep)
				}
				if rep.Hardlinks != 1 || rep.Specials != 4 || rep.Symlinks != 2 || rep.Warnings != 0 || rep.Bytes != progress || rep.Bytes < 3<<20 {
					t.Errorf("report %+v (progress %d)", rep, progress)
				}
				var st unix.Stat_t
				if err := unix.Stat(filepath.Join(dir, "big"), &st); err != nil || st.Blocks*512 >= st.Size {
					t.Errorf("big: %d blocks for %d bytes: the zero MiB was written, not left as a hole", st.Blocks, st.Size)
				}
			})
		}
	}
}

// TestExtractInclude extracts parts: only them and the directories above.
func TestExtractInclude(t *testing.T) {
	needRoot(t)
	meta, _ := encode(t, fullTree(), false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = Run(context.Background(), a, dir, Options{Include: []string{"d0/d1/d2", "zz-hardlink", "/defacl/inside", "defacl"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		r, _ := filepath.Rel(dir, p)
		if !strings.HasPrefix(r, "d0/d1/d2/") {
			got = append(got, r)
		}
		return nil
	})
	want := []string{".", "d0", "d0/d1", "d0/d1/d2", "defacl", "defacl/inside", "zz-hardlink"}
	if !slices.Equal(got, want) {
		t.Errorf("extracted %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "zz-hardlink")); err != nil || string(b) != "nl" {
		t.Errorf("hardlink outside the included target, as a copy: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d0/d1/d2/d3/d4")); err != nil {
		t.Error(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "d0"), &st); err != nil || st.Uid != 1000 || st.Mtim.Sec != 1600000000 {
		t.Errorf("d0 above an included path: %+v %v", st, err)
	}
	_, err = Run(context.Background(), a, t.TempDir(), Options{Include: []string{"no/such"}})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing include: %v", err)
	}
	_, err = Run(context.Background(), a, t.TempDir(), Options{Include: []string{"attrs"}, MapIDs: 4294967294 - 4242})
	if !errors.Is(err, ErrIDRange) || errors.Is(err, pxar.ErrFormat) {
		t.Errorf("id shifted past the largest: %v", err)
	}
}

// TestExtractNotEmpty refuses a non-empty directory without Force and
// merges with it.
func TestExtractNotEmpty(t *testing.T) {
	meta, _ := encode(t, dir("", file("a", "new"), dir("sub", file("b", "b")), file("c", "c"), dir("sub2", file("planted", "p"))), false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "a"), []byte("old content"), 0o644)
	os.WriteFile(filepath.Join(d, "keep"), []byte("kept"), 0o644)
	os.Mkdir(filepath.Join(d, "sub"), 0o700)
	os.WriteFile(filepath.Join(d, "sub", "other"), []byte("kept"), 0o644)
	os.Symlink("/nonexistent", filepath.Join(d, "c"))
	// A symlink out of the directory where the archive has a directory:
	// replaced, never followed.
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(d, "sub2"))
	if _, err := Run(context.Background(), a, d, Options{}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("non-empty without Force: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "a")); string(b) != "old content" {
		t.Fatal("changed before refusing")
	}
	if _, err := Run(context.Background(), a, d, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("written through a symlink out of the directory: %v", ents)
	}
	for p, want := range map[string]string{"a": "new", "keep": "kept", "sub/other": "kept", "sub/b": "b", "c": "c", "sub2/planted": "p"} {
		if b, err := os.ReadFile(filepath.Join(d, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", p, b, err, want)
		}
	}
}

// TestExtractNonRoot extracts as another user: owners stay the caller's,
// device nodes are skipped with a warning.
func TestExtractNonRoot(t *testing.T) {
	meta, _ := encode(t, fullTree(), false)
	a, _ := open(t, meta, nil)
	dir, uid := t.TempDir(), os.Getuid()
	var rep *Report
	var err error
	if os.Geteuid() == 0 {
		// As root: extract as uid 65534 (an effective uid of the thread).
		dir, uid = nobodyDir(t), 65534
		asNobody(t, func() { rep, err = Run(context.Background(), a, dir, Options{}) })
	} else {
		rep, err = Run(context.Background(), a, dir, Options{})
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "readonly"), 0o700) }) // for the directory's removal
	if err != nil {
		t.Fatal(err)
	}
	if rep.Warnings < 2 || rep.Specials != 2 {
		t.Errorf("report %+v: want the device nodes skipped with warnings, the FIFO and socket made", rep)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "attrs"), &st); err != nil || int(st.Uid) != uid || st.Mode&0o7777 != 0o4754 {
		t.Errorf("attrs: uid %d mode %#o, want the caller's %d and 04754 (%v)", st.Uid, st.Mode&0o7777, uid, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "readonly", "f")); err != nil || string(b) != "in a 0555 directory" {
		t.Errorf("file in a read-only directory: %q %v", b, err)
	}
}

// goodbyeHash returns the goodbye table hash of name, read from a
// one-entry archive.
func goodbyeHash(t *testing.T, name string) uint64 {
	meta, _ := encode(t, dir("", file(name, "")), false)
	// The root's goodbye table is at the end: header, one item, tail.
	return binary.LittleEndian.Uint64(meta[len(meta)-48:])
}

// TestExtractHostile extracts archives that try to write outside the
// directory or lie about their structure: each fails with a clear error
// and nothing appears outside.
func TestExtractHostile(t *testing.T) {
	cases := []struct {
		name  string
		tree  func(outside string) *pxar.Node
		split bool
		patch func(t *testing.T, meta, payload []byte) ([]byte, []byte)
		want  string
	}{
		{name: "name with dot dot", tree: func(string) *pxar.Node { return dir("", file("xx", "x")) },
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				copy(m[bytes.Index(m, []byte("xx\x00")):], "..")
				return m, p
			}, want: `".."`},
		{name: "name with a slash", tree: func(string) *pxar.Node { return dir("", file("a_b", "x")) },
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				m[bytes.Index(m, []byte("a_b\x00"))+1] = '/'
				return m, p
			}, want: "'/'"},
		{name: "symlink out then a file through it",
			tree: func(outside string) *pxar.Node {
				return dir("", &pxar.Node{Name: "esc", Kind: pxar.KindSymlink, Metadata: pxar.Metadata{Mode: 0o777}, LinkTarget: outside},
					dir("esd", file("planted", "x")))
			},
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				// Rename esd to esc, its goodbye hash with it: two entries
				// of one name, the second a directory under the symlink.
				copy(m[bytes.Index(m, []byte("esd\x00")):], "esc")
				h := binary.LittleEndian.AppendUint64(nil, goodbyeHash(t, "esd"))
				i := bytes.LastIndex(m, h)
				binary.LittleEndian.PutUint64(m[i:], goodbyeHash(t, "esc"))
				return m, p
			}, want: "(metadata stream offset %d): the archive holds two entries of this name"},
		{name: "hardlink through a symlink out",
			tree: func(outside string) *pxar.Node {
				return dir("", &pxar.Node{Name: "esc", Kind: pxar.KindSymlink, Metadata: pxar.Metadata{Mode: 0o777}, LinkTarget: outside},
					file("esd", "x"), &pxar.Node{Name: "link", Kind: pxar.KindHardlink, LinkTarget: "esd"})
			},
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				// The hardlink's target path "esd" becomes "esc": a symlink.
				i := bytes.LastIndex(m, []byte("esd\x00"))
				copy(m[i:], "esc")
				return m, p
			}, want: "hardlink"},
		{name: "payload reference beyond the payload stream", split: true,
			tree: func(string) *pxar.Node { return dir("", file("a", "hello")) },
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				i := bytes.Index(m, binary.LittleEndian.AppendUint64(nil, 0x419d3d6bc4ba977e))
				binary.LittleEndian.PutUint64(m[i+16:], uint64(len(p))+100)
				return m, p
			}, want: "beyond the payload stream"},
		{name: "goodbye table lies",
			tree: func(string) *pxar.Node { return dir("", dir("sub", file("xx", "x"), file("yy", "y"))) },
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				i := bytes.Index(m, binary.LittleEndian.AppendUint64(nil, 0x2fec4fa642d5731d)) // sub's goodbye item
				binary.LittleEndian.PutUint64(m[i+16+16:], binary.LittleEndian.Uint64(m[i+16+16:])+8)
				return m, p
			}, want: "goodbye"},
		{name: "deeper than the limit",
			tree: func(string) *pxar.Node {
				root := dir("")
				cur := root
				for range pxar.MaxDepth + 1 {
					n := dir("d")
					cur.Children = []*pxar.Node{n}
					cur = n
				}
				return root
			}, want: "deeper than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			meta, payload := encode(t, c.tree(outside), c.split)
			if c.patch != nil {
				meta, payload = c.patch(t, meta, payload)
			}
			a, err := open(t, meta, payload)
			if err == nil {
				_, err = Run(context.Background(), a, filepath.Join(base, "dir"), Options{Force: true})
			}
			want := c.want
			if strings.Contains(want, "%d") {
				// The offset of the second entry, which follows a symlink
				// whose target (a temporary path) varies in length.
				want = fmt.Sprintf(want, bytes.LastIndex(meta, []byte("esc\x00"))-16) // its FILENAME item
			}
			if err == nil || !errors.Is(err, pxar.ErrFormat) || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want a format error saying %q", err, want)
			}
			if ents, _ := os.ReadDir(outside); len(ents) > 0 {
				t.Errorf("written outside the directory: %v", ents)
			}
			ents, _ := os.ReadDir(base)
			for _, e := range ents {
				if e.Name() != "outside" && e.Name() != "dir" {
					t.Errorf("written beside the directory: %s", e.Name())
				}
			}
		})
	}
}

// TestExtractCanceled stops at once when the context is done, returning
// its error.
func TestExtractCanceled(t *testing.T) {
	meta, _ := encode(t, dir("", file("a", "x"), dir("b", file("c", "y"))), false)
	a, err := open(t, meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := t.TempDir()
	if _, err := Run(ctx, a, d, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 0 {
		t.Errorf("canceled run wrote %d entries", len(ents))
	}
}
