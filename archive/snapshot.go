package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Blob is a decoded blob archive of a snapshot ("qemu-server.conf.blob"),
// checked against its manifest.
type Blob struct {
	Name string
	Data []byte
}

// Set is the archives of one snapshot opened for reading in place: a
// Reader per chunk index archive, and the decoded blobs.
type Set struct {
	Readers []*Reader
	Names   []string // archive names of Readers ("drive-scsi0.img.fidx")
	Blobs   []Blob
}

// ErrNoArchive is OpenSet's error for a snapshot with nothing it was asked
// to serve.
var ErrNoArchive = errors.New("no archive to serve")

// OpenSet opens every chunk index archive of the snapshot src (only the
// fixed ones, .fidx, with imagesOnly) and, with blobs, reads and decodes
// its blob archives. opts.CacheSize is shared out among the archives. A
// snapshot with nothing to open is an error naming it; on any error, what
// was opened is closed again. The blobs and indexes are read under ctx; the
// Readers outlive it (its values, not its cancellation: they serve until
// Close).
func OpenSet(ctx context.Context, src *snapshot.Reader, imagesOnly, blobs bool, opts Options) (*Set, error) {
	set := &Set{}
	var indexes []string
	for _, f := range src.Manifest().Files {
		switch {
		case strings.HasSuffix(f.Filename, ".fidx"), strings.HasSuffix(f.Filename, ".didx") && !imagesOnly:
			indexes = append(indexes, f.Filename)
		case strings.HasSuffix(f.Filename, ".blob") && blobs:
			data, err := src.Blob(ctx, f.Filename)
			if err != nil {
				return nil, err
			}
			set.Blobs = append(set.Blobs, Blob{Name: f.Filename, Data: data})
		}
	}
	if len(indexes) == 0 && len(set.Blobs) == 0 {
		return nil, fmt.Errorf("snapshot %s has %w", src.Snapshot(), ErrNoArchive)
	}
	if len(indexes) > 0 {
		opts.CacheSize /= int64(len(indexes))
	}
	// The readers live until Close, not until an interrupt: a mount
	// detached lazily serves its remaining users (a loop device) on.
	live := context.WithoutCancel(ctx)
	for _, name := range indexes {
		r, err := OpenSnapshot(live, src, name, opts)
		if err != nil {
			set.Close()
			return nil, err
		}
		set.Readers = append(set.Readers, r)
		set.Names = append(set.Names, name)
	}
	return set, nil
}

// Close closes the Readers.
func (s *Set) Close() {
	for _, r := range s.Readers {
		r.Close()
	}
}
