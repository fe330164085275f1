package pxar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// catalogMagic starts a catalog.pcat1 file (the first 8 bytes of the
// SHA-256 of "Proxmox Backup Catalog file v1.0").
const catalogMagic = "\x91\xfd\x60\xf9\xc4\x67\x58\xd5"

// StreamCatalog names the catalog in *Error.
const StreamCatalog = "catalog"

// Catalog entry types, as stored (one byte each).
const (
	CatalogDir         byte = 'd'
	CatalogFile        byte = 'f'
	CatalogSymlink     byte = 'l'
	CatalogHardlink    byte = 'h'
	CatalogBlockDevice byte = 'b'
	CatalogCharDevice  byte = 'c'
	CatalogFIFO        byte = 'p'
	CatalogSocket      byte = 's'
)

// CatalogEntry is one entry of a catalog: its path from the catalog root
// (slash-separated; the top level holds one directory per archive, such
// as "root.pxar.didx"), type (a Catalog… constant) and, for files, size
// in bytes and mtime in seconds since the epoch.
type CatalogEntry struct {
	Path  string
	Name  string
	Type  byte
	Size  uint64
	MTime int64

	start int64 // directories: their table's offset
	depth int
}

// Catalog is an opened catalog.pcat1: a file of directory tables written
// children first, the root's last, followed by the root table's offset.
type Catalog struct {
	r    io.ReaderAt
	size int64
	root CatalogEntry
}

// OpenCatalog checks the magic of a catalog of size bytes and finds its
// root directory.
func OpenCatalog(r io.ReaderAt, size int64) (*Catalog, error) {
	c := &Catalog{r: r, size: size}
	b, err := c.read(".", 0, 8)
	if err != nil {
		return nil, err
	}
	if string(b) != catalogMagic {
		return nil, catalogCorrupt(".", 0, "no catalog magic")
	}
	if b, err = c.read(".", size-8, 8); err != nil {
		return nil, err
	}
	start := binary.LittleEndian.Uint64(b)
	if start < 8 || start >= uint64(size-8) {
		return nil, catalogCorrupt(".", size-8, "root table offset %d outside the catalog", start)
	}
	c.root = CatalogEntry{Path: ".", Type: CatalogDir, start: int64(start)}
	return c, nil
}

func catalogCorrupt(p string, off int64, format string, args ...any) error {
	return corrupt(p, StreamCatalog, off, format, args...)
}

func (c *Catalog) read(p string, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > c.size || n > c.size-off {
		return nil, catalogCorrupt(p, off, "truncated: %d bytes needed, the catalog has %d", n, c.size)
	}
	b := make([]byte, n)
	if m, err := c.r.ReadAt(b, off); m < len(b) {
		if err == nil || err == io.EOF {
			return nil, catalogCorrupt(p, off, "truncated")
		}
		return nil, &Error{Path: p, Stream: StreamCatalog, Offset: off, Err: err}
	}
	return b, nil
}

// Root returns the catalog's root directory.
func (c *Catalog) Root() CatalogEntry { return c.root }

// uvarint decodes the catalog's unsigned varint (7 bits a byte, low
// first, at most 10 bytes).
func uvarint(b []byte) (uint64, int, bool) {
	var v uint64
	for i := 0; i < 10 && i < len(b); i++ {
		v |= uint64(b[i]&127) << (7 * i)
		if b[i] < 128 {
			return v, i + 1, true
		}
	}
	return 0, 0, false
}

// svarint decodes the catalog's signed varint: a negative value is
// stored as its magnitude with the last byte's high bit set, followed by
// a zero byte.
func svarint(b []byte) (int64, int, bool) {
	var v uint64
	for i := 0; i < 11 && i < len(b); i++ {
		t := b[i]
		switch {
		case t == 0 && v == 0:
			return 0, i + 1, true
		case t == 0:
			return -int64(v-1) - 1, i + 1, true
		case t < 128:
			v |= uint64(t) << (7 * i)
			return int64(v), i + 1, true
		}
		v |= uint64(t&127) << (7 * i)
	}
	return 0, 0, false
}

// ReadDir returns the entries of a catalog directory, in stored order.
// Two directories of one table pointing to the same child table are an
// error matching ErrFormat (see Walk, which also refuses tables shared
// between directories of different tables: callers listing a whole tree
// should use Walk).
func (c *Catalog) ReadDir(dir CatalogEntry) ([]CatalogEntry, error) {
	if dir.Type != CatalogDir {
		return nil, &Error{Path: dir.Path, Stream: StreamCatalog, Err: errors.New("not a directory")}
	}
	p := dir.Path
	head, err := c.read(p, dir.start, min(10, c.size-dir.start))
	if err != nil {
		return nil, err
	}
	l, n, ok := uvarint(head)
	if !ok || l > uint64(c.size-dir.start-int64(n)) {
		return nil, catalogCorrupt(p, dir.start, "bad directory table length")
	}
	b, err := c.read(p, dir.start+int64(n), int64(l))
	if err != nil {
		return nil, err
	}
	base := dir.start + int64(n)
	pos := 0
	bad := func(what string) error { return catalogCorrupt(p, base+int64(pos), "bad %s in directory table", what) }
	count, m, ok := uvarint(b)
	if !ok || count > uint64(len(b))/2 {
		return nil, bad("entry count")
	}
	pos += m
	out := make([]CatalogEntry, 0, count)
	tables := map[int64]string{} // child table offset → its directory
	for range count {
		if pos >= len(b) {
			return nil, bad("entry")
		}
		e := CatalogEntry{Type: b[pos], depth: dir.depth + 1}
		pos++
		nl, m, ok := uvarint(b[pos:])
		if !ok || nl > MaxNameLen || nl > uint64(len(b)-pos-m) {
			return nil, bad("name length")
		}
		pos += m
		name := b[pos : pos+int(nl)]
		if err := checkName(name); err != nil {
			return nil, catalogCorrupt(p, base+int64(pos), "%v", err)
		}
		pos += int(nl)
		e.Name = string(name)
		e.Path = e.Name
		if p != "." {
			e.Path = p + "/" + e.Name
		}
		switch e.Type {
		case CatalogDir:
			off, m, ok := uvarint(b[pos:])
			if !ok || off == 0 || off > uint64(dir.start-8) {
				return nil, bad("directory offset")
			}
			pos += m
			e.start = dir.start - int64(off)
			if first, ok := tables[e.start]; ok {
				return nil, catalogCorrupt(e.Path, e.start, "directory table already listed as the table of %q", first)
			}
			tables[e.start] = e.Path
		case CatalogFile:
			size, m, ok := uvarint(b[pos:])
			if !ok {
				return nil, bad("file size")
			}
			pos += m
			mt, m, ok := svarint(b[pos:])
			if !ok {
				return nil, bad("file mtime")
			}
			pos += m
			e.Size, e.MTime = size, mt
		case CatalogSymlink, CatalogHardlink, CatalogBlockDevice, CatalogCharDevice, CatalogFIFO, CatalogSocket:
		default:
			return nil, catalogCorrupt(p, base+int64(pos-1-m-int(nl)), "unknown entry type %q", e.Type)
		}
		out = append(out, e)
	}
	if pos != len(b) {
		return nil, catalogCorrupt(p, base+int64(pos), "%d bytes after the directory table's entries", len(b)-pos)
	}
	return out, nil
}

// Walk calls fn for every catalog entry below the root, depth first, each
// directory before its contents. Directory tables lie strictly before
// their parent's, so the walk ends; it nests at most MaxDepth levels.
// Each directory table belongs to one directory: a table reached a second
// time (a catalog whose directories share tables would list exponentially
// many entries from a few bytes) is an error matching ErrFormat naming the
// second directory and the table's offset, and so is a walk of more
// entries than the catalog's size can hold (each takes at least
// minCatalogEntry bytes).
func (c *Catalog) Walk(fn func(CatalogEntry) error) error {
	w := &catalogWalk{seen: map[int64]string{c.root.start: c.root.Path}}
	return c.walk(w, c.root, fn)
}

// minCatalogEntry is the fewest bytes a catalog entry takes in its
// directory table: its type, name length and a one-byte name.
const minCatalogEntry = 3

// catalogWalk is the state of one Walk: the directory tables reached (table
// offset → the directory reaching it) and the entries walked.
type catalogWalk struct {
	seen    map[int64]string
	entries int64
}

func (c *Catalog) walk(w *catalogWalk, dir CatalogEntry, fn func(CatalogEntry) error) error {
	if dir.depth > MaxDepth {
		return catalogCorrupt(dir.Path, dir.start, "directories nested deeper than %d levels", MaxDepth)
	}
	kids, err := c.ReadDir(dir)
	if err != nil {
		return err
	}
	w.entries += int64(len(kids))
	if w.entries > c.size/minCatalogEntry {
		return catalogCorrupt(dir.Path, dir.start, "more entries than a catalog of %d bytes holds", c.size)
	}
	for _, k := range kids {
		if k.Type == CatalogDir {
			if first, ok := w.seen[k.start]; ok {
				return catalogCorrupt(k.Path, k.start, "directory table already listed as the table of %q", first)
			}
			w.seen[k.start] = k.Path
		}
	}
	for _, k := range kids {
		if err := fn(k); err != nil {
			if err == SkipDir && k.Type == CatalogDir {
				continue
			}
			return err
		}
		if k.Type == CatalogDir {
			if err := c.walk(w, k, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// EncodeCatalog writes a catalog of the tree under root to w, in the
// layout of the backup client: the root's children at the catalog's top
// level (give the root one directory child per archive, named like
// "root.pxar.didx", as backups do). Files record Size (or len(Data)) and
// MTimeSec; device nodes are block devices when Mode has block-device
// type bits.
func EncodeCatalog(w io.Writer, root *Node) error {
	var buf bytes.Buffer
	buf.WriteString(catalogMagic)
	start, err := catalogDir(&buf, root, 0)
	if err != nil {
		return err
	}
	buf.Write(binary.LittleEndian.AppendUint64(nil, uint64(start)))
	_, err = w.Write(buf.Bytes())
	return err
}

func putUvarint(b []byte, v uint64) []byte {
	for v >= 128 {
		b = append(b, byte(v&127|128))
		v >>= 7
	}
	return append(b, byte(v))
}

func putSvarint(b []byte, v int64) []byte {
	if v >= 0 {
		return putUvarint(b, uint64(v))
	}
	d := uint64(-(v + 1)) + 1
	for d >= 128 {
		b = append(b, byte(d&127|128))
		d >>= 7
	}
	return append(b, byte(d)|128, 0)
}

// catalogDir writes the tables of n's subdirectories, then n's, and
// returns the offset of n's table.
func catalogDir(buf *bytes.Buffer, n *Node, depth int) (int, error) {
	if depth > MaxDepth {
		return 0, fmt.Errorf("pxar: catalog: deeper than %d levels", MaxDepth)
	}
	kids := slices.Clone(n.Children)
	slices.SortFunc(kids, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	starts := make([]int, len(kids))
	for i, k := range kids {
		if k.Kind == KindDir {
			s, err := catalogDir(buf, k, depth+1)
			if err != nil {
				return 0, err
			}
			starts[i] = s
		}
	}
	start := buf.Len()
	table := putUvarint(nil, uint64(len(kids)))
	for i, k := range kids {
		t := map[Kind]byte{KindDir: CatalogDir, KindFile: CatalogFile, KindSymlink: CatalogSymlink,
			KindHardlink: CatalogHardlink, KindDevice: CatalogCharDevice, KindFIFO: CatalogFIFO, KindSocket: CatalogSocket}[k.Kind]
		if k.Kind == KindDevice && k.Mode&modeTypeMask == modeBlock {
			t = CatalogBlockDevice
		}
		table = append(table, t)
		table = putUvarint(table, uint64(len(k.Name)))
		table = append(table, k.Name...)
		switch k.Kind {
		case KindDir:
			table = putUvarint(table, uint64(start-starts[i]))
		case KindFile:
			size := uint64(len(k.Data))
			if k.Content != nil {
				size = k.Size
			}
			table = putSvarint(putUvarint(table, size), k.MTimeSec)
		}
	}
	buf.Write(putUvarint(nil, uint64(len(table))))
	buf.Write(table)
	return start, nil
}
