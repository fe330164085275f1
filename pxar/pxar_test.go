package pxar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func u64p(v uint64) *uint64 { return &v }

func file(name, data string) *Node {
	return &Node{Name: name, Kind: KindFile, Metadata: Metadata{Mode: 0o644, MTimeSec: 1700000000, MTimeNsec: 123456789}, Data: []byte(data)}
}

func dir(name string, kids ...*Node) *Node {
	return &Node{Name: name, Kind: KindDir, Metadata: Metadata{Mode: 0o755, UID: 1000, GID: 1000}, Children: kids}
}

// fullTree is a tree with every entry kind and attribute, awkward names,
// a 2,000-entry directory and a file of several MiB.
func fullTree() *Node {
	big := make([]byte, 5<<20+77)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	many := dir("many")
	for i := range 2000 {
		many.Children = append(many.Children, file(fmt.Sprintf("f%04d", i), fmt.Sprint("content ", i)))
	}
	attrs := file("attrs", "with attributes")
	attrs.UID, attrs.GID, attrs.Flags = 4242, 4343, 0x10
	attrs.MTimeSec, attrs.MTimeNsec = -305112601, 999000000
	attrs.Xattrs = []Xattr{{[]byte("user.empty"), []byte{}}, {[]byte("user.one"), []byte("value\x00bin")}}
	attrs.ACL = ACL{
		Users:  []ACLEntry{{1001, 6}, {1002, 4}},
		Groups: []ACLEntry{{2001, 5}},
	}
	attrs.ACL.GroupObj = u64p(4)
	attrs.FCaps = []byte{1, 0, 0, 2, 32, 0, 0, 0}
	attrs.QuotaProjectID = u64p(77)
	dacl := dir("defacl")
	dacl.ACL = ACL{Default: &ACLDefault{7, 5, 0, ACLNoMask}, DefaultUsers: []ACLEntry{{1001, 7}}, DefaultGroups: []ACLEntry{{3000, 1}}}
	chr := &Node{Name: "null", Kind: KindDevice, Metadata: Metadata{Mode: 0o666}, Device: Device{1, 3}}
	blk := &Node{Name: "sda", Kind: KindDevice, Metadata: Metadata{Mode: modeBlock | 0o660}, Device: Device{8, 0x12345}}
	deep := dir("d0")
	cur := deep
	for i := 1; i < 100; i++ {
		n := dir(fmt.Sprint("d", i))
		cur.Children = []*Node{n}
		cur = n
	}
	cur.Children = []*Node{file("bottom", "deep")}
	return dir("",
		file("plain", "hello"),
		file("zero", ""),
		&Node{Name: "big", Kind: KindFile, Metadata: Metadata{Mode: 0o600}, Size: uint64(len(big)),
			Content: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(big)), nil }},
		dir("with space ünïcødé ☃",
			file("line\nbreak", "nl"),
			file(strings.Repeat("n", 255), "long name"),
			file(strings.Repeat("é", 127)+"x", "long utf-8 name"),
			dir("empty"),
		),
		&Node{Name: "link", Kind: KindSymlink, Metadata: Metadata{Mode: 0o777}, LinkTarget: "../target with space/é"},
		&Node{Name: "zz-hardlink", Kind: KindHardlink, LinkTarget: "with space ünïcødé ☃/line\nbreak"},
		chr, blk,
		&Node{Name: "fifo", Kind: KindFIFO, Metadata: Metadata{Mode: 0o600}},
		&Node{Name: "sock", Kind: KindSocket, Metadata: Metadata{Mode: 0o755}},
		attrs, dacl, many, deep,
	)
}

// encode encodes root legacy (split false) or split.
func encode(t testing.TB, root *Node, split bool) (meta, payload []byte) {
	t.Helper()
	var m, p bytes.Buffer
	var pw io.Writer
	if split {
		pw = &p
	}
	if err := Encode(&m, pw, root); err != nil {
		t.Fatal(err)
	}
	if split {
		return m.Bytes(), p.Bytes()
	}
	return m.Bytes(), nil
}

func open(meta, payload []byte) (*Archive, error) {
	var pr io.ReaderAt
	if payload != nil {
		pr = bytes.NewReader(payload)
	}
	return Open(bytes.NewReader(meta), int64(len(meta)), pr, int64(len(payload)))
}

// walkAll walks the archive, reading every file's content, and returns the
// entries by path in walk order.
func walkAll(a *Archive) ([]*Entry, map[string][]byte, error) {
	var list []*Entry
	data := map[string][]byte{}
	err := a.Walk(func(e *Entry) error {
		list = append(list, e)
		if e.Kind == KindFile || e.Kind == KindHardlink {
			r, err := e.Open()
			if err != nil {
				return err
			}
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			data[e.Path] = b
		}
		return nil
	})
	return list, data, err
}

// expected lists the nodes of a tree by path, in archive order.
func expected(n *Node, p string, out *[]string, by map[string]*Node) {
	*out = append(*out, p)
	by[p] = n
	kids := slices.Clone(n.Children)
	slices.SortFunc(kids, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	for _, k := range kids {
		cp := k.Name
		if p != "." {
			cp = p + "/" + k.Name
		}
		expected(k, cp, out, by)
	}
}

func nodeData(t *testing.T, n *Node) []byte {
	if n.Content == nil {
		return n.Data
	}
	rc, _ := n.Content()
	b, _ := io.ReadAll(rc)
	return b
}

func TestRoundTrip(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprint("split=", split), func(t *testing.T) {
			root := fullTree()
			meta, payload := encode(t, root, split)
			a, err := open(meta, payload)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 2}[split]; a.Version() != want {
				t.Errorf("version %d, want %d", a.Version(), want)
			}
			list, data, err := walkAll(a)
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			by := map[string]*Node{}
			expected(root, ".", &order, by)
			var got []string
			for _, e := range list {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, order) {
				t.Fatalf("walk order differs: %d entries, want %d", len(got), len(order))
			}
			for _, e := range list {
				n := by[e.Path]
				if e.Kind != n.Kind {
					t.Errorf("%q: kind %v, want %v", e.Path, e.Kind, n.Kind)
					continue
				}
				if e.Kind == KindHardlink {
					if e.LinkTarget != n.LinkTarget || !bytes.Equal(data[e.Path], nodeData(t, by[n.LinkTarget])) {
						t.Errorf("%q: hardlink to %q, content %q", e.Path, e.LinkTarget, data[e.Path])
					}
					continue
				}
				if e.Mode&0o7777 != n.Mode&0o7777 || e.UID != n.UID || e.GID != n.GID || e.Flags != n.Flags ||
					e.MTimeSec != n.MTimeSec || e.MTimeNsec != n.MTimeNsec {
					t.Errorf("%q: stat %+v, want %+v", e.Path, e.Metadata, n.Metadata)
				}
				if !reflect.DeepEqual(e.Xattrs, n.Xattrs) && (len(e.Xattrs) > 0 || len(n.Xattrs) > 0) {
					t.Errorf("%q: xattrs %q, want %q", e.Path, e.Xattrs, n.Xattrs)
				}
				if !reflect.DeepEqual(e.ACL, n.ACL) || !bytes.Equal(e.FCaps, n.FCaps) || !reflect.DeepEqual(e.QuotaProjectID, n.QuotaProjectID) {
					t.Errorf("%q: acl %+v fcaps %x quota %v", e.Path, e.ACL, e.FCaps, e.QuotaProjectID)
				}
				switch e.Kind {
				case KindFile:
					want := nodeData(t, n)
					if !bytes.Equal(data[e.Path], want) || e.Size != uint64(len(want)) {
						t.Errorf("%q: %d bytes of content differ (want %d)", e.Path, len(data[e.Path]), len(want))
					}
				case KindSymlink:
					if e.LinkTarget != n.LinkTarget {
						t.Errorf("%q: target %q", e.Path, e.LinkTarget)
					}
				case KindDevice:
					if e.Device != n.Device {
						t.Errorf("%q: device %v", e.Path, e.Device)
					}
				}
			}
			if e, _ := a.LookupPath("sda"); e == nil || e.Mode&modeTypeMask != modeBlock {
				t.Errorf("sda is not a block device: %+v", e)
			}
			if e, _ := a.LookupPath("null"); e == nil || e.Mode&modeTypeMask != modeChar {
				t.Errorf("null is not a character device: %+v", e)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	meta, payload := encode(t, fullTree(), true)
	a, err := open(meta, payload)
	if err != nil {
		t.Fatal(err)
	}
	many, err := a.Lookup(a.Root(), "many")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 999, 1999} {
		name := fmt.Sprintf("f%04d", i)
		e, err := a.Lookup(many, name)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := e.Open()
		b, _ := io.ReadAll(r)
		if e.Name != name || string(b) != fmt.Sprint("content ", i) {
			t.Errorf("lookup %s: %q %q", name, e.Name, b)
		}
	}
	for _, p := range []string{"with space ünïcødé ☃/line\nbreak", "d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/d20/d21/d22/d23/d24/d25/d26/d27/d28/d29/d30/d31/d32/d33/d34/d35/d36/d37/d38/d39/d40/d41/d42/d43/d44/d45/d46/d47/d48/d49/d50/d51/d52/d53/d54/d55/d56/d57/d58/d59/d60/d61/d62/d63/d64/d65/d66/d67/d68/d69/d70/d71/d72/d73/d74/d75/d76/d77/d78/d79/d80/d81/d82/d83/d84/d85/d86/d87/d88/d89/d90/d91/d92/d93/d94/d95/d96/d97/d98/d99/bottom"} {
		if e, err := a.LookupPath(p); err != nil || e.Path != p {
			t.Errorf("LookupPath(%q): %v", p, err)
		}
	}
	if _, err := a.Lookup(many, "f2000"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing name: %v", err)
	}
	hl, err := a.LookupPath("zz-hardlink")
	if err != nil {
		t.Fatal(err)
	}
	if tg, err := a.HardlinkTarget(hl); err != nil || tg.Path != "with space ünïcødé ☃/line\nbreak" {
		t.Errorf("hardlink target %v %v", tg, err)
	}
}

// findType returns the offsets of the item headers of type typ in meta
// (a scan for the 8 type bytes).
func findType(meta []byte, typ uint64) []int {
	pat := binary.LittleEndian.AppendUint64(nil, typ)
	var offs []int
	for i := 0; ; {
		j := bytes.Index(meta[i:], pat)
		if j < 0 {
			return offs
		}
		offs = append(offs, i+j)
		i += j + 1
	}
}

func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
func get64(b []byte, off int) uint64    { return binary.LittleEndian.Uint64(b[off:]) }

// TestPayloadRefsAnyOrder swaps and duplicates payload references, as
// older clients wrote them: each must resolve by its offset.
func TestPayloadRefsAnyOrder(t *testing.T) {
	root := dir("", file("a", "AAAA"), file("b", "BBBBBBB"), file("c", "CC"))
	meta, payload := encode(t, root, true)
	refs := findType(meta, typePayloadRef)
	if len(refs) != 3 {
		t.Fatalf("%d refs", len(refs))
	}
	ra := slices.Clone(meta[refs[0]+16 : refs[0]+32])
	rc := slices.Clone(meta[refs[2]+16 : refs[2]+32])
	copy(meta[refs[0]+16:], rc) // a → c's content
	copy(meta[refs[2]+16:], ra) // c → a's content
	copy(meta[refs[1]+16:], ra) // b → a's content too
	a, err := open(meta, payload)
	if err != nil {
		t.Fatal(err)
	}
	_, data, err := walkAll(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(data["a"]) != "CC" || string(data["b"]) != "AAAA" || string(data["c"]) != "AAAA" {
		t.Errorf("contents %q", data)
	}
}

// hostile decodes a patched archive and checks the error: ErrFormat, the
// path inside the archive and the message.
func TestHostile(t *testing.T) {
	base := func() *Node {
		return dir("", file("plain", "hello"), dir("sub", file("xx", "x"), file("yyy", "y")), file("zzzz", "z"))
	}
	cases := []struct {
		name    string
		tree    func() *Node
		split   bool
		patch   func(t *testing.T, meta, payload []byte) ([]byte, []byte)
		path    string
		message string
	}{
		{name: "payload ref beyond the payload stream", split: true,
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				put64(m, findType(m, typePayloadRef)[0]+16, uint64(len(p))+100)
				return m, p
			}, path: "plain", message: "beyond the payload stream"},
		{name: "payload ref size beyond the payload stream", split: true,
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				put64(m, findType(m, typePayloadRef)[0]+24, 1<<62)
				return m, p
			}, path: "plain", message: "beyond the payload stream"},
		{name: "payload ref to no payload item", split: true,
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				put64(m, findType(m, typePayloadRef)[0]+16, 3)
				return m, p
			}, path: "plain", message: "not a payload"},
		{name: "payload ref without payload stream", split: true,
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) { return m, nil },
			path:  "plain", message: "without a payload stream"},
		{name: "goodbye item offset lies",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				g := findType(m, typeGoodbye)
				root := g[len(g)-1]
				put64(m, root+16+8, get64(m, root+16+8)+1)
				return m, p
			}, path: ".", message: "goodbye"},
		{name: "goodbye item size lies",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				g := findType(m, typeGoodbye)
				put64(m, g[0]+16+16, get64(m, g[0]+16+16)+8)
				return m, p
			}, path: "sub", message: "goodbye"},
		{name: "goodbye hash lies",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				g := findType(m, typeGoodbye)
				put64(m, g[0]+16, get64(m, g[0]+16)^1)
				return m, p
			}, path: "sub/", message: "hash does not match"},
		{name: "goodbye tail size lies",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				put64(m, len(m)-8, get64(m, len(m)-8)+24)
				return m, p
			}, path: ".", message: "goodbye"},
		{name: "goodbye tail offset lies",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				g := findType(m, typeGoodbye)
				sub := g[0]
				n := get64(m, sub+8)
				put64(m, sub+int(n)-16, get64(m, sub+int(n)-16)+16)
				return m, p
			}, path: "sub", message: "tail offset"},
		{name: "name with a slash",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				i := bytes.Index(m, []byte("yyy\x00"))
				m[i+1] = '/'
				return m, p
			}, path: "sub", message: "'/'"},
		{name: "name dot dot",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				i := bytes.Index(m, []byte("xx\x00"))
				copy(m[i:], "..")
				return m, p
			}, path: "sub", message: `".."`},
		{name: "name beyond the limit",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				i := bytes.Index(m, []byte("zzzz\x00"))
				put64(m, i-8, 16+MaxNameLen+2)
				return m, p
			}, path: ".", message: "name"},
		{name: "hardlink to a later offset",
			tree: func() *Node {
				return dir("", file("a", "1"), &Node{Name: "b", Kind: KindHardlink, LinkTarget: "a"})
			},
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				put64(m, findType(m, typeHardlink)[0]+16, 1<<40)
				return m, p
			}, path: "b", message: "hardlink offset"},
		{name: "hardlink target with dot dot",
			tree: func() *Node {
				return dir("", file("ab", "1"), &Node{Name: "b", Kind: KindHardlink, LinkTarget: "ab"})
			},
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				copy(m[findType(m, typeHardlink)[0]+24:], "..")
				return m, p
			}, path: "b", message: "hardlink target"},
		{name: "mode does not match the items",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				e := findType(m, typeEntry)[1] // plain
				put64(m, e+16, modeDir|0o755)
				return m, p
			}, path: "plain", message: "mode"},
		{name: "unknown item type",
			patch: func(t *testing.T, m, p []byte) ([]byte, []byte) {
				put64(m, findType(m, typePayload)[0], 0x1234)
				return m, p
			}, path: "plain", message: "unexpected item type"},
		{name: "too deep",
			tree: func() *Node {
				root := dir("")
				cur := root
				for range MaxDepth + 1 {
					n := dir("d")
					cur.Children = []*Node{n}
					cur = n
				}
				return root
			}, path: strings.Repeat("d/", MaxDepth) + "d", message: "deeper than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree := base
			if c.tree != nil {
				tree = c.tree
			}
			meta, payload := encode(t, tree(), c.split)
			if c.patch != nil {
				meta, payload = c.patch(t, meta, payload)
			}
			a, err := open(meta, payload)
			if err == nil {
				_, _, err = walkAll(a)
			}
			checkErr(t, err, c.path, c.message)
		})
	}
}

func checkErr(t *testing.T, err error, p, message string) {
	t.Helper()
	var pe *Error
	if !errors.Is(err, ErrFormat) || !errors.As(err, &pe) {
		t.Fatalf("error %v, want a format error", err)
	}
	if !strings.HasPrefix(pe.Path, strings.TrimSuffix(p, "/")) || !strings.Contains(err.Error(), message) || pe.Offset < 0 {
		t.Fatalf("error %v (path %q), want path %q and %q", err, pe.Path, p, message)
	}
}

// TestTruncated cuts archives at many lengths: each must fail with a
// format error, never panic.
func TestTruncated(t *testing.T) {
	root := dir("", file("a", "hello"), dir("s", file("b", "x"), &Node{Name: "l", Kind: KindSymlink, LinkTarget: "a"}))
	for _, split := range []bool{false, true} {
		meta, payload := encode(t, root, split)
		for n := 0; n < len(meta); n++ {
			a, err := open(meta[:n], payload)
			if err == nil {
				_, _, err = walkAll(a)
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("split=%v meta cut at %d: %v", split, n, err)
			}
		}
		for n := 0; split && n < len(payload)-16; n++ {
			a, err := open(meta, payload[:n])
			if err == nil {
				_, _, err = walkAll(a)
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("payload cut at %d: %v", n, err)
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	root := dir("", file("a", "hello"), dir("s", file("b", "x"), &Node{Name: "l", Kind: KindSymlink, LinkTarget: "a"}),
		&Node{Name: "h", Kind: KindHardlink, LinkTarget: "a"}, &Node{Name: "n", Kind: KindDevice, Device: Device{1, 3}})
	root.Children[0].Xattrs = []Xattr{{[]byte("user.x"), []byte("y")}}
	m, _ := encode(f, root, false)
	f.Add(m, []byte(nil))
	m, p := encode(f, root, true)
	f.Add(m, p)
	f.Fuzz(func(t *testing.T, meta, payload []byte) {
		a, err := open(meta, payload)
		if err != nil {
			return
		}
		_ = a.Walk(func(e *Entry) error {
			if e.Kind == KindFile || e.Kind == KindHardlink {
				if r, err := e.Open(); err == nil {
					_, _ = io.Copy(io.Discard, r)
				}
			}
			if e.Kind == KindDir {
				_, _ = a.Lookup(e, "a")
			}
			return nil
		})
	})
}

// TestLookupAllShapes looks up every name of directories of 0 to 70
// entries (every shape of the goodbye search tree) and a missing one.
func TestLookupAllShapes(t *testing.T) {
	for n := range 71 {
		d := dir("d")
		for i := range n {
			d.Children = append(d.Children, file(fmt.Sprint("name ", i), fmt.Sprint(i)))
		}
		meta, _ := encode(t, dir("", d), false)
		a, err := open(meta, nil)
		if err != nil {
			t.Fatal(err)
		}
		de, err := a.Lookup(a.Root(), "d")
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if e, err := a.Lookup(de, fmt.Sprint("name ", i)); err != nil || e.Name != fmt.Sprint("name ", i) {
				t.Fatalf("n=%d: lookup %d: %v", n, i, err)
			}
		}
		if _, err := a.Lookup(de, "missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("n=%d: missing: %v", n, err)
		}
	}
}

func TestTreeFromDir(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub dir/deeper"), 0o750))
	must(os.WriteFile(filepath.Join(root, "a"), []byte("alpha"), 0o640))
	must(os.WriteFile(filepath.Join(root, "sub dir/deeper/b\nc"), bytes.Repeat([]byte("b"), 100000), 0o600))
	must(os.Link(filepath.Join(root, "a"), filepath.Join(root, "z-link")))
	must(os.Symlink("../a", filepath.Join(root, "sub dir/sym")))
	must(unix.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	tree, err := TreeFromDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []bool{false, true} {
		meta, payload := encode(t, tree, split)
		a, err := open(meta, payload)
		if err != nil {
			t.Fatal(err)
		}
		_, data, err := walkAll(a)
		if err != nil {
			t.Fatal(err)
		}
		if string(data["a"]) != "alpha" || string(data["z-link"]) != "alpha" || len(data["sub dir/deeper/b\nc"]) != 100000 {
			t.Errorf("contents %q", data["a"])
		}
		for p, k := range map[string]Kind{"z-link": KindHardlink, "sub dir/sym": KindSymlink, "fifo": KindFIFO, "sub dir/deeper": KindDir} {
			if e, err := a.LookupPath(p); err != nil || e.Kind != k {
				t.Errorf("%q: %v %v", p, e, err)
			}
		}
		if e, _ := a.LookupPath("a"); e.Mode != modeRegular|0o640 {
			t.Errorf("mode %o", e.Mode)
		}
	}
}

// TestPrelude decodes a split archive with a PRELUDE item after the
// format version, as the backup client can write.
func TestPrelude(t *testing.T) {
	meta, payload := encode(t, dir("", file("a", "hello"), dir("s", file("b", "x"))), true)
	prelude := binary.LittleEndian.AppendUint64(nil, typePrelude)
	prelude = binary.LittleEndian.AppendUint64(prelude, headerSize+5)
	prelude = append(prelude, "hello"...)
	m := append(append(slices.Clone(meta[:24]), prelude...), meta[24:]...)
	// The root's goodbye tail points to the archive start.
	put64(m, len(m)-16, get64(m, len(m)-16)+uint64(len(prelude)))
	a, err := open(m, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, data, err := walkAll(a); err != nil || string(data["s/b"]) != "x" {
		t.Fatalf("%v %q", err, data)
	}
	if _, err := open(meta, payload[1:]); !errors.Is(err, ErrFormat) {
		t.Errorf("payload without start marker: %v", err)
	}
}

// TestEntryV1 decodes the old ENTRY_V1 items (mtime as nanoseconds).
func TestEntryV1(t *testing.T) {
	f := file("a", "hello")
	var m bytes.Buffer
	if err := encodeArchive(&m, nil, dir("", f, dir("s", file("b", "x"))), true); err != nil {
		t.Fatal(err)
	}
	if len(findType(m.Bytes(), typeEntryV1)) != 4 {
		t.Fatal("no ENTRY_V1 items written")
	}
	a, err := open(m.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.LookupPath("a")
	if err != nil || e.MTimeSec != f.MTimeSec || e.MTimeNsec != f.MTimeNsec || e.Mode != modeRegular|0o644 {
		t.Fatalf("%+v %v", e, err)
	}
}
