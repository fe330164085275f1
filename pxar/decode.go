package pxar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// ErrFormat is matched (errors.Is) by every error about malformed archive
// data: truncation, bad item types or sizes, offsets outside their
// stream or entry, names the format forbids, goodbye tables that do not
// describe their directory, limits exceeded. Errors of the underlying
// readers pass through unchanged (wrapped in *Error).
var ErrFormat = errors.New("malformed pxar archive")

// Stream names used in *Error.
const (
	StreamMeta    = "archive"
	StreamPayload = "payload"
)

// Error is an error of the decoder: where in the archive it happened and
// why. Path is the entry's path inside the archive ("." for the root),
// Stream is StreamMeta or StreamPayload and Offset the byte offset in it.
type Error struct {
	Path   string
	Stream string
	Offset int64
	Err    error
}

// Error quotes the path, which comes from the archive.
func (e *Error) Error() string {
	return fmt.Sprintf("pxar: %s: %s stream offset %d: %v", strconv.Quote(e.Path), e.Stream, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// formatError is a malformation: it matches ErrFormat.
type formatError struct{ msg string }

func (e *formatError) Error() string        { return e.msg }
func (e *formatError) Is(target error) bool { return target == ErrFormat }

func corrupt(p, stream string, off int64, format string, args ...any) error {
	return &Error{Path: p, Stream: stream, Offset: off, Err: &formatError{fmt.Sprintf(format, args...)}}
}

// Archive is an opened pxar archive: a metadata (or legacy single)
// stream and, for split archives, a payload stream. It keeps no state
// besides the root, so its methods may be called concurrently when the
// readers allow it.
type Archive struct {
	meta        io.ReaderAt
	metaSize    int64
	payload     io.ReaderAt
	payloadSize int64
	version     int
	root        *Entry
}

// Entry is one entry of the archive. Metadata is zero for hardlinks (the
// format stores none for them). LinkTarget is a symlink's target, or a
// hardlink's target path from the root; Device a device node's numbers;
// Size a regular file's content size in bytes.
type Entry struct {
	Path string // slash-separated path from the root; "." for the root
	Name string // last path component; "" for the root
	Kind Kind
	Metadata
	LinkTarget string
	Device     Device
	Size       uint64

	a          *Archive
	fileOff    int64 // FILENAME item; -1 for the root
	entryOff   int64 // ENTRY item (or HARDLINK)
	end        int64 // end of the entry (directories: of the goodbye table); -1 unknown
	dataOff    int64 // inline content, or a directory's first child
	payloadOff int64 // PAYLOAD header in the payload stream; -1 inline
	linkOff    uint64
	depth      int
}

// Open reads the start of an archive: the optional format version item,
// prelude and the root directory's metadata. meta is the archive (legacy)
// or metadata (split, .mpxar) stream of metaSize bytes; payload is the
// .ppxar stream of payloadSize bytes for split archives, or nil.
func Open(meta io.ReaderAt, metaSize int64, payload io.ReaderAt, payloadSize int64) (*Archive, error) {
	a := &Archive{meta: meta, metaSize: metaSize, payload: payload, payloadSize: payloadSize, version: 1}
	if metaSize < 0 || payloadSize < 0 {
		return nil, errors.New("pxar: negative stream size")
	}
	if payload != nil {
		typ, full, err := a.header(StreamPayload, ".", 0, payloadSize)
		if err != nil {
			return nil, err
		}
		if typ != typePayloadStartMark || full != headerSize {
			return nil, corrupt(".", StreamPayload, 0, "no payload start marker (item type %#x)", typ)
		}
	}
	pos := int64(0)
	typ, full, err := a.header(StreamMeta, ".", pos, metaSize)
	if err != nil {
		return nil, err
	}
	if typ == typeFormatVersion {
		if full != headerSize+8 {
			return nil, corrupt(".", StreamMeta, pos, "format version item of %d bytes", full)
		}
		b, err := a.read(StreamMeta, ".", pos+headerSize, 8)
		if err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint64(b)
		if v != 1 && v != 2 {
			return nil, corrupt(".", StreamMeta, pos, "unknown format version %d", v)
		}
		a.version = int(v)
		pos += int64(full)
		if typ, full, err = a.header(StreamMeta, ".", pos, metaSize); err != nil {
			return nil, err
		}
		if typ == typePrelude {
			pos += int64(full)
		}
	}
	root, err := a.parseEntry(-1, pos, metaSize, ".", 0, nil)
	if err != nil {
		return nil, err
	}
	if root.Kind != KindDir {
		return nil, corrupt(".", StreamMeta, pos, "the root is a %s, not a directory", root.Kind)
	}
	a.root = root
	return a, nil
}

// Version is the archive's format version: 1 (legacy, no version item)
// or 2 (split archives).
func (a *Archive) Version() int { return a.version }

// Root returns the root directory.
func (a *Archive) Root() *Entry { return a.root }

// read reads n bytes at off of a stream, failing with ErrFormat when they
// lie beyond its end.
func (a *Archive) read(stream, p string, off, n int64) ([]byte, error) {
	r, size := a.meta, a.metaSize
	if stream == StreamPayload {
		r, size = a.payload, a.payloadSize
	}
	if off < 0 || n < 0 || off > size || n > size-off {
		return nil, corrupt(p, stream, off, "truncated: %d bytes needed, the stream has %d", n, size)
	}
	b := make([]byte, n)
	if m, err := r.ReadAt(b, off); m < len(b) {
		if err == nil || err == io.EOF {
			return nil, corrupt(p, stream, off, "truncated: %d of %d bytes read", m, n)
		}
		return nil, &Error{Path: p, Stream: stream, Offset: off, Err: err}
	}
	return b, nil
}

// rawHeader reads the item header at off.
func (a *Archive) rawHeader(stream, p string, off int64) (typ, full uint64, err error) {
	b, err := a.read(stream, p, off, headerSize)
	if err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), nil
}

// header reads the item header at off, whose item must end by limit.
func (a *Archive) header(stream, p string, off, limit int64) (typ, full uint64, err error) {
	if typ, full, err = a.rawHeader(stream, p, off); err != nil {
		return 0, 0, err
	}
	if full < headerSize {
		return 0, 0, corrupt(p, stream, off, "item header with size %d", full)
	}
	if full > uint64(limit-off) {
		return 0, 0, corrupt(p, stream, off, "item of %d bytes runs past the end at %d", full, limit)
	}
	return typ, full, nil
}

// content reads the content of the item at off of full bytes.
func (a *Archive) content(p string, off int64, full uint64) ([]byte, error) {
	return a.read(StreamMeta, p, off+headerSize, int64(full)-headerSize)
}

// cstring checks that b is a NUL-terminated string of 1 to max bytes
// without other NULs and returns it without the NUL.
func cstring(b []byte, max int) ([]byte, bool) {
	if len(b) < 2 || len(b) > max+1 || b[len(b)-1] != 0 || bytes.IndexByte(b[:len(b)-1], 0) >= 0 {
		return nil, false
	}
	return b[:len(b)-1], true
}

// fixedSize returns the content size of the fixed-size item types.
func fixedSize(typ uint64) (uint64, bool) {
	switch typ {
	case typeEntry:
		return statSize, true
	case typeEntryV1:
		return statV1Size, true
	case typeACLUser, typeACLGroup, typeACLDefaultUser, typeACLDefaultGroup, typeDevice, typePayloadRef:
		return 16, true
	case typeACLGroupObj, typeQuotaProjID:
		return 8, true
	case typeACLDefault:
		return 32, true
	}
	return 0, false
}

// parseEntry decodes the entry whose FILENAME is at fileOff (the root:
// fileOff -1, its ENTRY at entryOff) and ends at end (-1: unknown, a
// hardlink target). wantHash, when set, is the goodbye table's hash for
// the name.
func (a *Archive) parseEntry(fileOff, entryOff, end int64, parent string, depth int, wantHash *uint64) (*Entry, error) {
	w := *a
	w.meta = &window{r: a.meta, size: a.metaSize}
	return w.parse(a, fileOff, entryOff, end, parent, depth, wantHash)
}

// window serves the small reads of one entry's items from one larger
// read of the metadata stream. It is used by one goroutine.
type window struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64
}

// windowSize is what a window reads at once.
const windowSize = 8 << 10

func (w *window) ReadAt(p []byte, off int64) (int, error) {
	if off >= w.off && off+int64(len(p)) <= w.off+int64(len(w.buf)) {
		return copy(p, w.buf[off-w.off:]), nil
	}
	if len(p) > windowSize/2 || off < 0 || off >= w.size {
		return w.r.ReadAt(p, off)
	}
	n := min(windowSize, w.size-off)
	if w.buf == nil {
		w.buf = make([]byte, windowSize)
	}
	m, err := w.r.ReadAt(w.buf[:n], off)
	if int64(m) < n || int64(len(p)) > n {
		w.buf = w.buf[:0]
		if err != nil && err != io.EOF {
			return 0, err
		}
		return w.r.ReadAt(p, off)
	}
	w.buf, w.off = w.buf[:n], off
	return copy(p, w.buf), nil
}

// parse is parseEntry, reading through a (with a window) for the entry of
// archive orig.
func (a *Archive) parse(orig *Archive, fileOff, entryOff, end int64, parent string, depth int, wantHash *uint64) (*Entry, error) {
	e := &Entry{a: orig, Path: ".", fileOff: fileOff, end: end, payloadOff: -1, depth: depth}
	limit := end
	if limit < 0 {
		limit = a.metaSize
	}
	pos := entryOff
	if fileOff >= 0 {
		typ, full, err := a.rawHeader(StreamMeta, parent, fileOff)
		if err != nil {
			return nil, err
		}
		if typ != typeFilename {
			return nil, corrupt(parent, StreamMeta, fileOff, "expected a file name item, found type %#x", typ)
		}
		if full > headerSize+MaxNameLen+1 {
			return nil, corrupt(parent, StreamMeta, fileOff, "file name item of %d bytes, over the limit", full)
		}
		if _, _, err := a.header(StreamMeta, parent, fileOff, limit); err != nil {
			return nil, err
		}
		b, err := a.content(parent, fileOff, full)
		if err != nil {
			return nil, err
		}
		name, ok := cstring(b, MaxNameLen)
		if !ok {
			return nil, corrupt(parent, StreamMeta, fileOff, "file name not NUL-terminated or empty")
		}
		if err := checkName(name); err != nil {
			return nil, corrupt(parent, StreamMeta, fileOff, "%v", err)
		}
		e.Name = string(name)
		e.Path = e.Name
		if parent != "." {
			e.Path = parent + "/" + e.Name
		}
		if wantHash != nil && hashName(name) != *wantHash {
			return nil, corrupt(e.Path, StreamMeta, fileOff, "goodbye table hash does not match the name")
		}
		pos = fileOff + int64(full)
	}
	e.entryOff = pos
	p := e.Path
	typ, full, err := a.header(StreamMeta, p, pos, limit)
	if err != nil {
		return nil, err
	}
	if typ == typeHardlink && fileOff >= 0 {
		if full < headerSize+8+2 || full > headerSize+8+MaxNameLen+1 {
			return nil, corrupt(p, StreamMeta, pos, "hardlink item of %d bytes", full)
		}
		b, err := a.content(p, pos, full)
		if err != nil {
			return nil, err
		}
		target, ok := cstring(b[8:], MaxNameLen)
		if !ok || !validRelPath(string(target)) {
			return nil, corrupt(p, StreamMeta, pos, "hardlink target %q is not a relative path", target)
		}
		e.Kind, e.linkOff, e.LinkTarget = KindHardlink, binary.LittleEndian.Uint64(b), string(target)
		if e.linkOff == 0 || e.linkOff > uint64(fileOff) {
			return nil, corrupt(p, StreamMeta, pos, "hardlink offset %d does not point before the link", e.linkOff)
		}
		return e, a.checkEnd(e, pos+int64(full))
	}
	if typ != typeEntry && typ != typeEntryV1 {
		return nil, corrupt(p, StreamMeta, pos, "expected an entry item, found type %#x", typ)
	}
	metaBytes := 0
	for {
		if pos == limit {
			break // a FIFO or socket that is the last item of its range
		}
		typ, full, err := a.header(StreamMeta, p, pos, limit)
		if err != nil {
			return nil, err
		}
		if typ == typeFilename || typ == typeGoodbye {
			break
		}
		if pos != e.entryOff && (typ == typeEntry || typ == typeEntryV1) {
			return nil, corrupt(p, StreamMeta, pos, "second entry item")
		}
		var max uint64
		switch want, ok := fixedSize(typ); {
		case ok:
			if full != headerSize+want {
				return nil, corrupt(p, StreamMeta, pos, "item type %#x of %d bytes, want %d", typ, full, headerSize+want)
			}
			max = want
		case typ == typeXattr || typ == typeFCaps:
			max = MaxXattrLen
		case typ == typeSymlink:
			max = MaxNameLen + 1
		case typ == typePayload:
		default:
			return nil, corrupt(p, StreamMeta, pos, "unexpected item type %#x", typ)
		}
		var b []byte
		if typ != typePayload {
			if full-headerSize > max {
				return nil, corrupt(p, StreamMeta, pos, "item type %#x of %d bytes, over the limit of %d", typ, full, headerSize+max)
			}
			if metaBytes += int(full); metaBytes > MaxMetadataBytes {
				return nil, corrupt(p, StreamMeta, pos, "over %d bytes of metadata items", MaxMetadataBytes)
			}
			if b, err = a.content(p, pos, full); err != nil {
				return nil, err
			}
		}
		le := binary.LittleEndian
		acl := &e.ACL
		term := false
		switch typ {
		case typeEntry:
			e.Mode, e.Flags, e.UID, e.GID = le.Uint64(b), le.Uint64(b[8:]), le.Uint32(b[16:]), le.Uint32(b[20:])
			e.MTimeSec, e.MTimeNsec = int64(le.Uint64(b[24:])), le.Uint32(b[32:])
			if e.MTimeNsec >= 1e9 {
				return nil, corrupt(p, StreamMeta, pos, "mtime nanoseconds %d", e.MTimeNsec)
			}
		case typeEntryV1:
			e.Mode, e.Flags, e.UID, e.GID = le.Uint64(b), le.Uint64(b[8:]), le.Uint32(b[16:]), le.Uint32(b[20:])
			ns := le.Uint64(b[24:])
			e.MTimeSec, e.MTimeNsec = int64(ns/1e9), uint32(ns%1e9)
		case typeXattr:
			i := bytes.IndexByte(b, 0)
			if i < 1 {
				return nil, corrupt(p, StreamMeta, pos, "xattr without a name")
			}
			e.Xattrs = append(e.Xattrs, Xattr{Name: b[:i], Value: b[i+1:]})
		case typeACLUser:
			acl.Users = append(acl.Users, ACLEntry{le.Uint64(b), le.Uint64(b[8:])})
		case typeACLGroup:
			acl.Groups = append(acl.Groups, ACLEntry{le.Uint64(b), le.Uint64(b[8:])})
		case typeACLDefaultUser:
			acl.DefaultUsers = append(acl.DefaultUsers, ACLEntry{le.Uint64(b), le.Uint64(b[8:])})
		case typeACLDefaultGroup:
			acl.DefaultGroups = append(acl.DefaultGroups, ACLEntry{le.Uint64(b), le.Uint64(b[8:])})
		case typeACLGroupObj:
			if acl.GroupObj != nil {
				return nil, corrupt(p, StreamMeta, pos, "second ACL group object item")
			}
			v := le.Uint64(b)
			acl.GroupObj = &v
		case typeACLDefault:
			if acl.Default != nil {
				return nil, corrupt(p, StreamMeta, pos, "second default ACL item")
			}
			acl.Default = &ACLDefault{le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])}
		case typeFCaps:
			if e.FCaps != nil {
				return nil, corrupt(p, StreamMeta, pos, "second fcaps item")
			}
			e.FCaps = b
		case typeQuotaProjID:
			if e.QuotaProjectID != nil {
				return nil, corrupt(p, StreamMeta, pos, "second quota project id item")
			}
			v := le.Uint64(b)
			e.QuotaProjectID = &v
		case typePayload:
			e.Kind, e.Size, e.dataOff, term = KindFile, full-headerSize, pos+headerSize, true
		case typePayloadRef:
			off, size := le.Uint64(b), le.Uint64(b[8:])
			if a.payload == nil {
				return nil, corrupt(p, StreamMeta, pos, "payload reference in an archive without a payload stream")
			}
			if off > uint64(a.payloadSize) || size > uint64(a.payloadSize)-off || uint64(a.payloadSize)-off-size < headerSize {
				return nil, corrupt(p, StreamMeta, pos, "payload reference (offset %d, size %d) beyond the payload stream of %d bytes", off, size, a.payloadSize)
			}
			e.Kind, e.Size, e.payloadOff, term = KindFile, size, int64(off), true
		case typeSymlink:
			t, ok := cstring(b, MaxNameLen)
			if !ok {
				return nil, corrupt(p, StreamMeta, pos, "symlink target not NUL-terminated, empty or too long")
			}
			e.Kind, e.LinkTarget, term = KindSymlink, string(t), true
		case typeDevice:
			e.Kind, e.Device, term = KindDevice, Device{le.Uint64(b), le.Uint64(b[8:])}, true
		default:
			return nil, corrupt(p, StreamMeta, pos, "unexpected item type %#x", typ)
		}
		pos += int64(full)
		if term {
			break
		}
	}
	mt := e.Mode & modeTypeMask
	if !modeFits(e.Kind, mt) {
		return nil, corrupt(p, StreamMeta, e.entryOff, "mode %#o does not match the entry's items", e.Mode)
	}
	switch mt {
	case modeDir:
		e.Kind, e.dataOff = KindDir, pos
		if depth > MaxDepth {
			return nil, corrupt(p, StreamMeta, e.entryOff, "directory nested deeper than %d levels", MaxDepth)
		}
		return e, nil
	case modeFIFO:
		e.Kind = KindFIFO
	case modeSocket:
		e.Kind = KindSocket
	}
	return e, a.checkEnd(e, pos)
}

// checkEnd checks that a non-directory entry ends where its goodbye item
// says.
func (a *Archive) checkEnd(e *Entry, pos int64) error {
	if e.end >= 0 && pos != e.end {
		return corrupt(e.Path, StreamMeta, pos, "entry ends at %d, its goodbye item says %d", pos, e.end)
	}
	return nil
}

// modeFits reports whether file type bits mt fit the kind the items gave
// (0: no content item, a directory, FIFO or socket).
func modeFits(k Kind, mt uint64) bool {
	switch k {
	case KindFile:
		return mt == modeRegular
	case KindSymlink:
		return mt == modeSymlink
	case KindDevice:
		return mt == modeChar || mt == modeBlock
	}
	return mt == modeDir || mt == modeFIFO || mt == modeSocket
}

// validRelPath reports whether p is a relative slash path of valid names.
func validRelPath(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		if checkName([]byte(c)) != nil {
			return false
		}
	}
	return true
}

// child is a directory item from the goodbye table, with its absolute
// offset.
type child struct {
	hash      uint64
	off, size int64
}

// goodbye reads and checks a directory's goodbye tail and header: the
// table's offset and its number of items (the tail excluded).
func (a *Archive) goodbye(d *Entry) (gstart, n int64, err error) {
	if d.Kind != KindDir {
		return 0, 0, &Error{Path: d.Path, Stream: StreamMeta, Offset: d.entryOff, Err: fmt.Errorf("not a directory")}
	}
	p := d.Path
	if d.end-d.dataOff < headerSize+goodbyeItemSize {
		return 0, 0, corrupt(p, StreamMeta, d.dataOff, "no room for a goodbye table")
	}
	tail, err := a.read(StreamMeta, p, d.end-goodbyeItemSize, goodbyeItemSize)
	if err != nil {
		return 0, 0, err
	}
	le := binary.LittleEndian
	marker, toff, gsize := le.Uint64(tail), le.Uint64(tail[8:]), le.Uint64(tail[16:])
	tpos := d.end - goodbyeItemSize
	if marker != goodbyeTailMarker {
		return 0, 0, corrupt(p, StreamMeta, tpos, "no goodbye tail marker")
	}
	if gsize < headerSize+goodbyeItemSize || (gsize-headerSize)%goodbyeItemSize != 0 || gsize > uint64(d.end-d.dataOff) {
		return 0, 0, corrupt(p, StreamMeta, tpos, "goodbye table size %d does not fit the directory", gsize)
	}
	gstart = d.end - int64(gsize)
	typ, full, err := a.rawHeader(StreamMeta, p, gstart)
	if err != nil {
		return 0, 0, err
	}
	if typ != typeGoodbye || full != gsize {
		return 0, 0, corrupt(p, StreamMeta, gstart, "goodbye tail size %d does not point to a goodbye item (type %#x, size %d)", gsize, typ, full)
	}
	wantOff := uint64(gstart - d.entryOff)
	if d.fileOff < 0 && toff == uint64(gstart) {
		wantOff = toff // the root's tail points to the archive start
	}
	if toff != wantOff {
		return 0, 0, corrupt(p, StreamMeta, tpos, "goodbye tail offset %d does not point to the directory's entry", toff)
	}
	n = int64(gsize-headerSize)/goodbyeItemSize - 1
	if n > MaxDirEntries {
		return 0, 0, corrupt(p, StreamMeta, gstart, "%d directory entries, over %d", n, MaxDirEntries)
	}
	return gstart, n, nil
}

// item decodes goodbye item i of a table read as b (at gstart), checking
// that it points inside the directory.
func item(d *Entry, gstart int64, i int, b []byte) (child, error) {
	le := binary.LittleEndian
	rel, size := le.Uint64(b[8:]), le.Uint64(b[16:])
	if rel > uint64(gstart-d.dataOff) || size > rel {
		return child{}, corrupt(d.Path, StreamMeta, gstart+headerSize+int64(i)*goodbyeItemSize, "goodbye item (offset %d, size %d) outside the directory", rel, size)
	}
	return child{le.Uint64(b), gstart - int64(rel), int64(size)}, nil
}

// table reads and checks a directory's goodbye table: the children sorted
// by offset, tiling the space between the directory's metadata and the
// table.
func (a *Archive) table(d *Entry) ([]child, error) {
	p := d.Path
	gstart, n, err := a.goodbye(d)
	if err != nil {
		return nil, err
	}
	b, err := a.read(StreamMeta, p, gstart+headerSize, n*goodbyeItemSize)
	if err != nil {
		return nil, err
	}
	kids := make([]child, n)
	for i := range kids {
		if kids[i], err = item(d, gstart, i, b[i*goodbyeItemSize:]); err != nil {
			return nil, err
		}
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].off < kids[j].off })
	next := d.dataOff
	for _, k := range kids {
		if k.off != next || k.size == 0 {
			return nil, corrupt(p, StreamMeta, k.off, "goodbye table does not tile the directory (item at %d, expected %d)", k.off, next)
		}
		next += k.size
	}
	if next != gstart {
		return nil, corrupt(p, StreamMeta, next, "goodbye table does not cover the directory up to the table at %d", gstart)
	}
	return kids, nil
}

// ReadDir calls fn for each entry of directory dir, in archive order,
// decoding one entry at a time (the directory's goodbye table, 24 bytes
// an entry, is read first). It stops at the first error, returning it;
// fn returning an error stops it too and ReadDir returns that error.
func (a *Archive) ReadDir(dir *Entry, fn func(*Entry) error) error {
	kids, err := a.table(dir)
	if err != nil {
		return err
	}
	for _, k := range kids {
		e, err := a.parseEntry(k.off, -1, k.off+k.size, dir.Path, dir.depth+1, &k.hash)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Lookup finds name in directory dir through its goodbye table, a binary
// search tree of name hashes: it reads O(log n) table items and decodes
// only the entries whose hash matches (a table that is no search tree
// makes names missing, never wrong: each entry found is checked against
// its item). A missing name returns an error matching fs.ErrNotExist.
func (a *Archive) Lookup(dir *Entry, name string) (*Entry, error) {
	gstart, n, err := a.goodbye(dir)
	if err != nil {
		return nil, err
	}
	h := hashName([]byte(name))
	var visit func(i int64) (*Entry, error)
	visit = func(i int64) (*Entry, error) {
		if i >= n {
			return nil, nil
		}
		b, err := a.read(StreamMeta, dir.Path, gstart+headerSize+i*goodbyeItemSize, goodbyeItemSize)
		if err != nil {
			return nil, err
		}
		k, err := item(dir, gstart, int(i), b)
		switch {
		case err != nil:
			return nil, err
		case h < k.hash:
			return visit(2*i + 1)
		case h > k.hash:
			return visit(2*i + 2)
		}
		e, err := a.parseEntry(k.off, -1, k.off+k.size, dir.Path, dir.depth+1, &k.hash)
		if err != nil || e.Name == name {
			return e, err
		}
		// Equal hashes sit on both sides.
		if e, err := visit(2*i + 1); e != nil || err != nil {
			return e, err
		}
		return visit(2*i + 2)
	}
	e, err := visit(0)
	if e == nil && err == nil {
		err = &Error{Path: path.Join(dir.Path, name), Stream: StreamMeta, Offset: dir.entryOff, Err: fs.ErrNotExist}
	}
	return e, err
}

// LookupPath finds a slash-separated path from the root ("." or "" for
// the root itself), one Lookup per component.
func (a *Archive) LookupPath(p string) (*Entry, error) {
	e := a.root
	for c := range strings.SplitSeq(strings.Trim(p, "/"), "/") {
		if c == "" || c == "." {
			continue
		}
		var err error
		if e, err = a.Lookup(e, c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// SkipDir, returned by a Walk callback for a directory, skips its
// contents.
var SkipDir = fs.SkipDir

// Walk calls fn for every entry, the root first, in archive order (a
// directory before its contents), as extraction and tar streams need.
// Directories nest at most MaxDepth levels.
func (a *Archive) Walk(fn func(*Entry) error) error {
	return a.walk(a.root, fn)
}

func (a *Archive) walk(e *Entry, fn func(*Entry) error) error {
	if err := fn(e); err != nil {
		if err == SkipDir && e.Kind == KindDir {
			return nil
		}
		return err
	}
	if e.Kind != KindDir {
		return nil
	}
	return a.ReadDir(e, func(c *Entry) error { return a.walk(c, fn) })
}

// HardlinkTarget decodes the regular file a hardlink entry points to.
func (a *Archive) HardlinkTarget(e *Entry) (*Entry, error) {
	if e.Kind != KindHardlink {
		return nil, &Error{Path: e.Path, Stream: StreamMeta, Offset: e.entryOff, Err: errors.New("not a hardlink")}
	}
	off := e.fileOff - int64(e.linkOff)
	parent := path.Dir(e.LinkTarget)
	t, err := a.parseEntry(off, -1, -1, parent, 0, nil)
	if err != nil {
		return nil, err
	}
	if t.Kind != KindFile || t.Path != e.LinkTarget {
		return nil, corrupt(e.Path, StreamMeta, e.entryOff, "hardlink to %q points to a %s named %q", e.LinkTarget, t.Kind, t.Name)
	}
	return t, nil
}

// Open returns a reader of a regular file's content (a hardlink's: of its
// target). For split archives it first checks the payload item the
// reference points to: a PAYLOAD header whose size matches. References
// are resolved by offset alone, in any order, duplicates included.
func (e *Entry) Open() (*File, error) {
	a := e.a
	if e.Kind == KindHardlink {
		t, err := a.HardlinkTarget(e)
		if err != nil {
			return nil, err
		}
		return t.Open()
	}
	if e.Kind != KindFile {
		return nil, &Error{Path: e.Path, Stream: StreamMeta, Offset: e.entryOff, Err: fmt.Errorf("a %s has no content", e.Kind)}
	}
	if e.payloadOff < 0 {
		return &File{io.NewSectionReader(a.meta, e.dataOff, int64(e.Size)), e.Path, StreamMeta, e.dataOff}, nil
	}
	typ, full, err := a.rawHeader(StreamPayload, e.Path, e.payloadOff)
	if err != nil {
		return nil, err
	}
	if typ != typePayload || full != e.Size+headerSize {
		return nil, corrupt(e.Path, StreamPayload, e.payloadOff, "payload reference points to item type %#x of %d bytes, not a payload of %d bytes", typ, full, e.Size)
	}
	off := e.payloadOff + headerSize
	return &File{io.NewSectionReader(a.payload, off, int64(e.Size)), e.Path, StreamPayload, off}, nil
}

// File reads a regular file's content: io.Reader, io.ReaderAt and
// io.Seeker over Size bytes. Errors of the underlying stream reader come
// wrapped in *Error with the file's path and the stream offset.
type File struct {
	sr     *io.SectionReader
	path   string
	stream string
	base   int64
}

func (f *File) wrap(err error, off int64) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &Error{Path: f.path, Stream: f.stream, Offset: f.base + off, Err: err}
}

// Read reads the content sequentially.
func (f *File) Read(p []byte) (int, error) {
	pos, _ := f.sr.Seek(0, io.SeekCurrent)
	n, err := f.sr.Read(p)
	return n, f.wrap(err, pos+int64(n))
}

// ReadAt reads the content at off (from the content's start).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.sr.ReadAt(p, off)
	return n, f.wrap(err, off+int64(n))
}

// Seek sets the offset of the next Read.
func (f *File) Seek(offset int64, whence int) (int64, error) { return f.sr.Seek(offset, whence) }

// Size is the content size in bytes.
func (f *File) Size() int64 { return f.sr.Size() }

// Offset is the entry's position in the metadata stream (its FILENAME
// item; 0 for the root): stable, unique per entry, usable as an inode
// number or in error messages.
func (e *Entry) Offset() int64 {
	if e.fileOff < 0 {
		return 0
	}
	return e.fileOff
}
