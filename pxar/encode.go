package pxar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
)

// Node describes one entry of a tree for the Encoder. Kind picks the
// entry type; Metadata.Mode's permission bits are kept and its file type
// bits are set from Kind (for KindDevice, a Mode with block-device type
// bits makes a block device, anything else a character device). Hardlink
// nodes carry no metadata of their own (the format stores none).
type Node struct {
	Name string // one path component; empty for the root
	Kind Kind
	Metadata

	// Data is a regular file's content, unless Content is set: then the
	// content is read from Content() and must be exactly Size bytes.
	Data    []byte
	Content func() (io.ReadCloser, error)
	Size    uint64

	// LinkTarget is a symlink's target, or a hardlink's target: the
	// slash-separated path from the root (no leading slash) of a regular
	// file encoded before it.
	LinkTarget string
	Device     Device
	Children   []*Node // directories; encoded in byte order of Name

	dev, ino, nlink uint64 // TreeFromDir's hardlink detection
}

// Encode writes the tree under root (a KindDir node) as a pxar archive to
// meta. With payload nil it writes the legacy single-stream form (format
// version 1, contents inline); otherwise the split form (format version 2):
// file contents go to payload and meta carries PAYLOAD_REFs. It returns
// the first write error, or an error naming the node path for a tree the
// format cannot hold (bad names, hardlinks to files not yet written,
// content of the wrong size).
func Encode(meta, payload io.Writer, root *Node) error {
	return encodeArchive(meta, payload, root, false)
}

// encodeArchive is Encode; entryV1 writes the old ENTRY_V1 items (mtime in
// nanoseconds, not before the epoch) that early clients wrote.
func encodeArchive(meta, payload io.Writer, root *Node, entryV1 bool) error {
	if root == nil || root.Kind != KindDir {
		return errors.New("pxar: encode: the root must be a directory")
	}
	e := &encoder{meta: &countWriter{w: meta}, links: map[string]uint64{}, entryV1: entryV1}
	if payload != nil {
		e.payload = &countWriter{w: payload}
		if err := e.payload.header(typePayloadStartMark, 0); err != nil {
			return err
		}
		if err := e.meta.header(typeFormatVersion, 8); err != nil {
			return err
		}
		if err := e.meta.u64(2); err != nil {
			return err
		}
	}
	if err := e.dir(root, "", -1, 0); err != nil {
		return err
	}
	if e.payload != nil {
		return e.payload.header(typePayloadTailMarker, 0)
	}
	return nil
}

// encoder is the state of one Encode call.
type encoder struct {
	meta, payload *countWriter
	links         map[string]uint64 // file path → offset of its FILENAME item
	entryV1       bool
}

// countWriter counts the bytes written to w.
type countWriter struct {
	w   io.Writer
	pos uint64
}

func (c *countWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.pos += uint64(n)
	return err
}

func (c *countWriter) u64(v uint64) error {
	return c.write(binary.LittleEndian.AppendUint64(nil, v))
}

// header writes an item header for content bytes of content.
func (c *countWriter) header(typ, content uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, typ)
	return c.write(binary.LittleEndian.AppendUint64(b, content+headerSize))
}

// item writes a whole item.
func (c *countWriter) item(typ uint64, content []byte) error {
	if err := c.header(typ, uint64(len(content))); err != nil {
		return err
	}
	return c.write(content)
}

// checkName returns an error when name cannot be one path component.
func checkName(name []byte) error {
	switch {
	case len(name) == 0:
		return errors.New("empty file name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("file name of %d bytes, over %d", len(name), MaxNameLen)
	case string(name) == "." || string(name) == "..":
		return fmt.Errorf("file name %q", name)
	case bytes.IndexByte(name, '/') >= 0 || bytes.IndexByte(name, 0) >= 0:
		return fmt.Errorf("file name %q holds '/' or NUL", name)
	}
	return nil
}

// gbItem is one goodbye table item before the table is written: offset is
// still absolute.
type gbItem struct{ hash, offset, size uint64 }

// dir writes a directory: for the root (fileOff < 0) its ENTRY; otherwise
// the FILENAME was written at fileOff by the caller.
func (e *encoder) dir(n *Node, p string, fileOff int64, depth int) error {
	entryOff := e.meta.pos
	if fileOff < 0 {
		entryOff = 0 // the root's goodbye tail points to the archive start
	}
	if err := e.metadata(n, modeDir); err != nil {
		return err
	}
	kids := slices.Clone(n.Children)
	sort.SliceStable(kids, func(i, j int) bool { return kids[i].Name < kids[j].Name })
	items := make([]gbItem, 0, len(kids))
	for i, k := range kids {
		if i > 0 && kids[i-1].Name == k.Name {
			return fmt.Errorf("pxar: encode %q: duplicate name %q", p, k.Name)
		}
		off := e.meta.pos
		if err := e.child(k, path.Join(p, k.Name), depth+1); err != nil {
			return err
		}
		items = append(items, gbItem{hashName([]byte(k.Name)), off, e.meta.pos - off})
	}
	gstart := e.meta.pos
	sort.SliceStable(items, func(i, j int) bool { return items[i].hash < items[j].hash })
	table := make([]byte, 0, (len(items)+1)*goodbyeItemSize)
	for _, src := range bstOrder(len(items)) {
		it := items[src]
		table = binary.LittleEndian.AppendUint64(table, it.hash)
		table = binary.LittleEndian.AppendUint64(table, gstart-it.offset)
		table = binary.LittleEndian.AppendUint64(table, it.size)
	}
	table = binary.LittleEndian.AppendUint64(table, goodbyeTailMarker)
	table = binary.LittleEndian.AppendUint64(table, gstart-entryOff)
	table = binary.LittleEndian.AppendUint64(table, uint64((len(items)+1)*goodbyeItemSize+headerSize))
	return e.meta.item(typeGoodbye, table)
}

// child writes one directory entry, FILENAME first.
func (e *encoder) child(n *Node, p string, depth int) error {
	if err := checkName([]byte(n.Name)); err != nil {
		return fmt.Errorf("pxar: encode %q: %w", p, err)
	}
	fileOff := e.meta.pos
	if err := e.meta.item(typeFilename, append([]byte(n.Name), 0)); err != nil {
		return err
	}
	switch n.Kind {
	case KindDir:
		return e.dir(n, p, int64(fileOff), depth)
	case KindFile:
		e.links[p] = fileOff
		if err := e.metadata(n, modeRegular); err != nil {
			return err
		}
		return e.content(n, p)
	case KindSymlink:
		if err := e.metadata(n, modeSymlink); err != nil {
			return err
		}
		return e.meta.item(typeSymlink, append([]byte(n.LinkTarget), 0))
	case KindHardlink:
		target, ok := e.links[n.LinkTarget]
		if !ok {
			return fmt.Errorf("pxar: encode %q: hardlink target %q is no file written before", p, n.LinkTarget)
		}
		b := binary.LittleEndian.AppendUint64(nil, fileOff-target)
		return e.meta.item(typeHardlink, append(append(b, n.LinkTarget...), 0))
	case KindDevice:
		t := uint64(modeChar)
		if n.Mode&modeTypeMask == modeBlock {
			t = modeBlock
		}
		if err := e.metadata(n, t); err != nil {
			return err
		}
		b := binary.LittleEndian.AppendUint64(nil, n.Device.Major)
		return e.meta.item(typeDevice, binary.LittleEndian.AppendUint64(b, n.Device.Minor))
	case KindFIFO:
		return e.metadata(n, modeFIFO)
	case KindSocket:
		return e.metadata(n, modeSocket)
	}
	return fmt.Errorf("pxar: encode %q: unknown kind %d", p, n.Kind)
}

// content writes a regular file's content: inline, or to the payload
// stream with a PAYLOAD_REF in meta.
func (e *encoder) content(n *Node, p string) error {
	size := uint64(len(n.Data))
	var src io.Reader = bytes.NewReader(n.Data)
	if n.Content != nil {
		rc, err := n.Content()
		if err != nil {
			return fmt.Errorf("pxar: encode %q: %w", p, err)
		}
		defer rc.Close()
		size, src = n.Size, rc
	}
	out := e.meta
	if e.payload != nil {
		ref := binary.LittleEndian.AppendUint64(nil, e.payload.pos)
		if err := e.meta.item(typePayloadRef, binary.LittleEndian.AppendUint64(ref, size)); err != nil {
			return err
		}
		out = e.payload
	}
	if err := out.header(typePayload, size); err != nil {
		return err
	}
	w, err := io.Copy(writerFunc(out.write), io.LimitReader(src, int64(size)))
	if err != nil {
		return fmt.Errorf("pxar: encode %q: %w", p, err)
	}
	if uint64(w) != size {
		return fmt.Errorf("pxar: encode %q: content of %d bytes, %d announced", p, w, size)
	}
	return nil
}

// writerFunc adapts a write function to io.Writer.
type writerFunc func([]byte) error

func (f writerFunc) Write(b []byte) (int, error) {
	if err := f(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// metadata writes the ENTRY item and the attribute items, in the format's
// order: xattrs, ACL user, group, group_obj, default, default users,
// default groups, fcaps, quota project id.
func (e *encoder) metadata(n *Node, typ uint64) error {
	le := binary.LittleEndian
	b := le.AppendUint64(nil, n.Mode&^uint64(modeTypeMask)|typ)
	b = le.AppendUint64(b, n.Flags)
	b = le.AppendUint32(b, n.UID)
	b = le.AppendUint32(b, n.GID)
	item := typeEntry
	if e.entryV1 {
		item = typeEntryV1
		b = le.AppendUint64(b, uint64(n.MTimeSec)*1e9+uint64(n.MTimeNsec))
	} else {
		b = le.AppendUint64(b, uint64(n.MTimeSec))
		b = le.AppendUint32(b, n.MTimeNsec)
		b = le.AppendUint32(b, 0)
	}
	if err := e.meta.item(item, b); err != nil {
		return err
	}
	for _, x := range n.Xattrs {
		if err := e.meta.item(typeXattr, append(append(append([]byte{}, x.Name...), 0), x.Value...)); err != nil {
			return err
		}
	}
	pair := func(typ uint64, l []ACLEntry) error {
		for _, a := range l {
			if err := e.meta.item(typ, le.AppendUint64(le.AppendUint64(nil, a.ID), a.Permissions)); err != nil {
				return err
			}
		}
		return nil
	}
	a := &n.ACL
	if err := pair(typeACLUser, a.Users); err != nil {
		return err
	}
	if err := pair(typeACLGroup, a.Groups); err != nil {
		return err
	}
	if a.GroupObj != nil {
		if err := e.meta.item(typeACLGroupObj, le.AppendUint64(nil, *a.GroupObj)); err != nil {
			return err
		}
	}
	if d := a.Default; d != nil {
		b := le.AppendUint64(nil, d.UserObj)
		b = le.AppendUint64(b, d.GroupObj)
		b = le.AppendUint64(b, d.Other)
		if err := e.meta.item(typeACLDefault, le.AppendUint64(b, d.Mask)); err != nil {
			return err
		}
	}
	if err := pair(typeACLDefaultUser, a.DefaultUsers); err != nil {
		return err
	}
	if err := pair(typeACLDefaultGroup, a.DefaultGroups); err != nil {
		return err
	}
	if n.FCaps != nil {
		if err := e.meta.item(typeFCaps, n.FCaps); err != nil {
			return err
		}
	}
	if n.QuotaProjectID != nil {
		return e.meta.item(typeQuotaProjID, le.AppendUint64(nil, *n.QuotaProjectID))
	}
	return nil
}
