package pxar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestVarints(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 1 << 40, math.MaxInt64, -1, -127, -128, -129, -305112601, math.MinInt64} {
		b := putSvarint(nil, v)
		got, n, ok := svarint(b)
		if !ok || n != len(b) || got != v {
			t.Errorf("svarint %d: % x → %d (%d, %v)", v, b, got, n, ok)
		}
	}
	for _, v := range []uint64{0, 127, 128, 1<<63 + 5, math.MaxUint64} {
		b := putUvarint(nil, v)
		if got, n, ok := uvarint(b); !ok || n != len(b) || got != v {
			t.Errorf("uvarint %d: % x → %d", v, b, got)
		}
	}
}

func catalogOf(t testing.TB, root *Node) []byte {
	var b bytes.Buffer
	if err := EncodeCatalog(&b, root); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCatalog(t *testing.T) {
	tree := fullTree()
	attrs := tree.Children[10]
	attrs.MTimeSec = -305112601
	root := dir("", tree)
	tree.Name = "root.pxar.didx"
	data := catalogOf(t, root)
	c, err := OpenCatalog(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	by := map[string]*Node{}
	expected(root, ".", &order, by)
	var got []string
	err = c.Walk(func(e CatalogEntry) error {
		got = append(got, e.Path)
		n := by[e.Path]
		if n == nil {
			return fmt.Errorf("unexpected %q", e.Path)
		}
		want := map[Kind]byte{KindDir: 'd', KindFile: 'f', KindSymlink: 'l', KindHardlink: 'h', KindDevice: 'c', KindFIFO: 'p', KindSocket: 's'}[n.Kind]
		if n.Kind == KindDevice && n.Mode&modeTypeMask == modeBlock {
			want = 'b'
		}
		if e.Type != want {
			t.Errorf("%q: type %c, want %c", e.Path, e.Type, want)
		}
		if e.Type == CatalogFile && (e.Size != uint64(len(nodeData(t, n))) || e.MTime != n.MTimeSec) {
			t.Errorf("%q: size %d mtime %d", e.Path, e.Size, e.MTime)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(order)-1 {
		t.Fatalf("%d entries, want %d", len(got), len(order)-1)
	}
}

func TestCatalogHostile(t *testing.T) {
	data := catalogOf(t, dir("", dir("a.pxar.didx", file("f", "x"), dir("sub", file("g", "yy")))))
	for n := 0; n < len(data); n++ {
		c, err := OpenCatalog(bytes.NewReader(data[:n]), int64(n))
		if err == nil {
			err = c.Walk(func(CatalogEntry) error { return nil })
		}
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	// The root table offset pointing at itself or beyond is refused.
	bad := bytes.Clone(data)
	bad[len(bad)-8] = byte(len(bad) - 8)
	if _, err := OpenCatalog(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrFormat) {
		t.Errorf("root offset at the end: %v", err)
	}
}

func FuzzCatalog(f *testing.F) {
	f.Add(catalogOf(f, dir("", dir("a.pxar.didx", file("f", "x"), dir("sub", file("g", "yy"))))))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := OpenCatalog(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		_ = c.Walk(func(CatalogEntry) error { return nil })
	})
}

// dagCatalog builds a catalog of levels directory tables, each holding
// two directory entries: in shared form both point to the table below (a
// walk would list 2^levels entries), in split form the second points to
// a second table of the level below, which itself points to the first
// table of its level below (tables shared across parents, not within
// one).
func dagCatalog(levels int, split bool) []byte {
	b := []byte(catalogMagic)
	// the bottom table: no entries
	prev := []int{len(b)}
	b = append(b, 1, 0)
	for l := range levels {
		var cur []int
		for i := range 2 {
			start := len(b)
			var table []byte
			table = putUvarint(table, 2)
			for j, name := range []string{"a", "b"} {
				child := prev[0]
				if split && j == 1 && i == 0 && len(prev) > 1 {
					child = prev[1]
				}
				table = append(table, CatalogDir, 1)
				table = append(table, name...)
				table = putUvarint(table, uint64(start-child))
			}
			b = append(putUvarint(b, uint64(len(table))), table...)
			cur = append(cur, start)
			if !split || l == levels-1 {
				break
			}
		}
		prev = cur
	}
	return binary.LittleEndian.AppendUint64(b, uint64(prev[0]))
}

func TestCatalogSharedTables(t *testing.T) {
	for _, tc := range []struct {
		name  string
		split bool
		walk  bool
	}{
		{"shared within a table, Walk", false, true},
		{"shared within a table, ReadDir", false, false},
		{"shared across tables, Walk", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := dagCatalog(48, tc.split)
			c, err := OpenCatalog(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			if tc.walk {
				err = c.Walk(func(CatalogEntry) error {
					if n++; n > 10000 {
						return errors.New("walked on")
					}
					return nil
				})
			} else {
				var rd func(CatalogEntry) error
				rd = func(d CatalogEntry) error {
					kids, err := c.ReadDir(d)
					for _, k := range kids {
						if n++; n > 10000 {
							return errors.New("walked on")
						}
						if err := rd(k); err != nil {
							return err
						}
					}
					return err
				}
				err = rd(c.Root())
			}
			var pe *Error
			if !errors.Is(err, ErrFormat) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "already listed") {
				t.Fatalf("%d bytes, %d entries: %v, want a shared table refused", len(data), n, err)
			}
			t.Log(err)
		})
	}
}
