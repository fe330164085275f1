package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// ErrNoPxar is wrapped by OpenPxar's error when the snapshot has no pxar
// archive of the name given.
var ErrNoPxar = errors.New("no such pxar archive")

// PxarNames returns the dynamic index files of the pxar archive name in
// manifest m: a legacy archive is one stream, NAME.pxar.didx (payload
// ""); a split archive (proxmox-backup-client 3.2.5 and later, change
// detection mode data or metadata) is its
// metadata stream NAME.mpxar.didx and its payload stream NAME.ppxar.didx.
// name may be given as "root", "root.pxar", "root.pxar.didx", "root.mpxar",
// "root.mpxar.didx", "root.ppxar" or "root.ppxar.didx". ok is false when
// m lists neither form (or only one stream of a split archive).
func PxarNames(m *index.Manifest, name string) (meta, payload string, ok bool) {
	base := strings.TrimSuffix(name, ".didx")
	for _, ext := range []string{".pxar", ".mpxar", ".ppxar"} {
		base = strings.TrimSuffix(base, ext)
	}
	has := func(f string) bool { _, err := m.File(f); return err == nil }
	if has(base+".mpxar.didx") && has(base+".ppxar.didx") {
		return base + ".mpxar.didx", base + ".ppxar.didx", true
	}
	if has(base + ".pxar.didx") {
		return base + ".pxar.didx", "", true
	}
	return "", "", false
}

// IsPxar says whether archive name names a pxar archive (its name ends in
// .pxar, .mpxar or .ppxar, with or without .didx).
func IsPxar(name string) bool {
	base := strings.TrimSuffix(name, ".didx")
	return strings.HasSuffix(base, ".pxar") || strings.HasSuffix(base, ".mpxar") || strings.HasSuffix(base, ".ppxar")
}

// Pxar is a pxar archive of a snapshot opened for random access: the
// decoder over the archive readers of its stream(s). Close it when done.
type Pxar struct {
	*pxar.Archive
	// Meta reads the archive (legacy) or its metadata stream (split);
	// Payload reads the payload stream of a split archive, nil for a
	// legacy one. Their counters say what was fetched.
	Meta, Payload *Reader
	// MetaName and PayloadName are the index files read ("" when none).
	MetaName, PayloadName string
}

// Close closes the archive readers.
func (p *Pxar) Close() error {
	err := p.Meta.Close()
	if p.Payload != nil {
		err = errors.Join(err, p.Payload.Close())
	}
	return err
}

// OpenPxar opens the pxar archive name (see PxarNames) of snapshot src,
// legacy or split, through archive readers with opts (read-ahead, cache,
// salvage as OpenSnapshot). Errors: ErrNoPxar (wrapped, naming the
// archives the snapshot has) when it has no such archive; OpenSnapshot's
// errors; a malformed archive wraps pxar.ErrFormat.
func OpenPxar(ctx context.Context, src *snapshot.Reader, name string, opts Options) (*Pxar, error) {
	meta, payload, ok := PxarNames(src.Manifest(), name)
	if !ok {
		var have []string
		for _, f := range src.Manifest().Files {
			if IsPxar(f.Filename) {
				have = append(have, f.Filename)
			}
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("%s: %w %q (the snapshot holds no pxar archive)", src.Snapshot(), ErrNoPxar, name)
		}
		return nil, fmt.Errorf("%s: %w %q (it holds %s)", src.Snapshot(), ErrNoPxar, name, strings.Join(have, ", "))
	}
	p := &Pxar{MetaName: meta, PayloadName: payload}
	var err error
	if p.Meta, err = OpenSnapshot(ctx, src, meta, opts); err != nil {
		return nil, err
	}
	var pr io.ReaderAt
	var ps int64
	if payload != "" {
		if p.Payload, err = OpenSnapshot(ctx, src, payload, opts); err != nil {
			p.Meta.Close()
			return nil, err
		}
		pr, ps = p.Payload, p.Payload.Size()
	}
	if p.Archive, err = pxar.Open(p.Meta, p.Meta.Size(), pr, ps); err != nil {
		p.Close()
		return nil, fmt.Errorf("%s/%s: %w", src.Snapshot(), meta, err)
	}
	return p, nil
}
