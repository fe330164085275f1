package restore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// ErrNotChunkIndex is returned by LoadPlan for an archive that is not a
// fixed (.fidx) or dynamic (.didx) index.
var ErrNotChunkIndex = errors.New("not a chunk index (.fidx or .didx) archive")

// LoadPlan streams the index archive name (.fidx, §3, or .didx, §4) of the
// snapshot in directory snapDir from store, builds its Plan and checks the
// recomputed csum and size against the manifest entry (§6.2); the index
// header's own csum is not trusted. cc is the key for an encrypted archive
// (nil otherwise; an encrypted archive without key returns an error wrapping
// index.ErrMissingKey). The index is never held in memory whole.
func LoadPlan(ctx context.Context, store chunkstore.FileOpener, snapDir string, m *index.Manifest, name string, cc *crypto.Config) (*Plan, *index.FileInfo, error) {
	return loadPlan(ctx, store, snapDir, m, name, cc, false)
}

// PlanOf loads the plan of archive name of the snapshot src reads (see
// LoadPlan): its index is read as src reads the snapshot's files (from
// the store member that holds the manifest), checked against src's
// manifest and decoded with src's key. An error reading it because the
// snapshot was pruned meanwhile wraps snapshot.ErrRemoved.
func PlanOf(ctx context.Context, src *snapshot.Reader, name string) (*Plan, *index.FileInfo, error) {
	plan, fi, err := LoadPlan(ctx, src, src.Snapshot().Dir(), src.Manifest(), name, src.Key())
	if err != nil {
		return nil, nil, src.Removed(ctx, err)
	}
	return plan, fi, nil
}

// LoadPlanUnkeyed is LoadPlan for checking an encrypted archive without its
// key (Options.CRCOnly): the keyed zero-chunk digest is unknown, so zero
// chunks are planned as ordinary chunks and get read and checked too.
func LoadPlanUnkeyed(ctx context.Context, store chunkstore.FileOpener, snapDir string, m *index.Manifest, name string) (*Plan, *index.FileInfo, error) {
	return loadPlan(ctx, store, snapDir, m, name, nil, true)
}

func loadPlan(ctx context.Context, store chunkstore.FileOpener, snapDir string, m *index.Manifest, name string, cc *crypto.Config, unkeyed bool) (*Plan, *index.FileInfo, error) {
	fi, err := m.File(name)
	if err != nil {
		return nil, nil, err
	}
	dynamic := strings.HasSuffix(name, ".didx")
	if !dynamic && !strings.HasSuffix(name, ".fidx") {
		return nil, fi, fmt.Errorf("%s: %w", name, ErrNotChunkIndex)
	}
	encrypted := fi.CryptMode == index.CryptEncrypt
	if encrypted && cc == nil && !unkeyed {
		return nil, fi, fmt.Errorf("%s: %w: archive is encrypted, give its key with --keyfile", name, index.ErrMissingKey)
	}
	if !encrypted {
		cc = nil
	}
	if unkeyed && encrypted {
		cc = nil
	}
	rel := path.Join(snapDir, name)
	rc, size, err := store.OpenFile(ctx, rel)
	if err != nil {
		return nil, fi, err
	}
	defer rc.Close()
	var r io.Reader = bufio.NewReaderSize(rc, 1<<20)
	if size < 0 {
		// The server announced no size (no Content-Length, a gzip-encoded
		// body): the index readers need it, so the index is read whole,
		// bounded by MaxUnsizedIndex.
		data, err := io.ReadAll(io.LimitReader(r, MaxUnsizedIndex+1))
		if err != nil {
			return nil, fi, fmt.Errorf("%s: %w", rel, err)
		}
		if len(data) > MaxUnsizedIndex {
			return nil, fi, fmt.Errorf("%s: %w: the server announced no size and the index exceeds %d bytes", rel, chunkstore.ErrTooLarge, MaxUnsizedIndex)
		}
		r, size = bytes.NewReader(data), int64(len(data))
	}
	var plan *Plan
	var csum [32]byte
	if dynamic {
		plan, csum, err = planDynamic(ctx, r, size, fi.Size)
	} else {
		plan, csum, err = planFixedWith(ctx, r, size, cc, unkeyed && encrypted, fi.Size)
	}
	if err != nil {
		return nil, fi, fmt.Errorf("%s: %w", rel, err)
	}
	if err := m.VerifyFile(name, plan.Size, csum); err != nil {
		return nil, fi, fmt.Errorf("%s: %w", rel, err)
	}
	return plan, fi, nil
}

// MaxUnsizedIndex bounds, in bytes, an index file whose size the store
// could not tell (chunkstore.Store.OpenFile returned -1), which is then read
// into memory: 256 MiB holds the fixed index of a 32 TiB image in 4 MiB
// chunks.
const MaxUnsizedIndex = 256 << 20

func planFixed(ctx context.Context, r io.Reader, size int64, cc *crypto.Config) (*Plan, [32]byte, error) {
	return planFixedWith(ctx, r, size, cc, false, 0)
}

// planCheckEvery is how many index entries are planned between checks of
// the context: a 1 GiB index (32 M entries) stops within milliseconds of
// Ctrl-C, not after seconds.
const planCheckEvery = 1 << 16

// planFixedWith plans a fixed index; noZero plans zero chunks as ordinary
// chunks (their keyed digest is unknown without the key). want is the
// image size the manifest gives (0: not checked): a header that disagrees
// is refused before any entry is read, so a hostile index cannot make the
// plan grow beyond what the manifest declares.
func planFixedWith(ctx context.Context, r io.Reader, size int64, cc *crypto.Config, noZero bool, want uint64) (*Plan, [32]byte, error) {
	fr, err := index.NewFixedReader(r, size)
	if err != nil {
		return nil, [32]byte{}, err
	}
	h := fr.Header()
	if want != 0 && h.Size != want {
		return nil, [32]byte{}, fmt.Errorf("%w: the index header says %d bytes, the manifest %d", index.ErrSizeMismatch, h.Size, want)
	}
	plan := NewPlan(h.Size, h.ChunkSize, cc)
	if noZero {
		plan.ZeroDigest = crypto.Digest{} // unknown without the key
		plan.noZero = true
	}
	for {
		pos, d, err := fr.Next()
		if err == io.EOF {
			plan.Finish()
			return plan, fr.Csum(), nil
		}
		if err != nil {
			return nil, [32]byte{}, err
		}
		if pos%planCheckEvery == 0 && ctx.Err() != nil {
			return nil, [32]byte{}, ctx.Err()
		}
		if err := plan.Add(pos, d); err != nil {
			return nil, [32]byte{}, err
		}
	}
}

// planDynamic plans a dynamic index; want is the archive size the manifest
// gives (0: not checked): more entries than bytes are refused before any
// entry is read.
func planDynamic(ctx context.Context, r io.Reader, size int64, want uint64) (*Plan, [32]byte, error) {
	dr, err := index.NewDynamicReader(r, size)
	if err != nil {
		return nil, [32]byte{}, err
	}
	if want != 0 && dr.Len() > want {
		return nil, [32]byte{}, fmt.Errorf("%w: %d index entries cannot make the %d bytes the manifest gives", index.ErrSizeMismatch, dr.Len(), want)
	}
	plan := NewPlan(0, 0, nil)
	var start uint64
	for {
		pos, e, err := dr.Next()
		if err == io.EOF {
			plan.Size = dr.Size()
			plan.Finish()
			return plan, dr.Csum(), nil
		}
		if err != nil {
			return nil, [32]byte{}, err
		}
		if pos%planCheckEvery == 0 && ctx.Err() != nil {
			return nil, [32]byte{}, ctx.Err()
		}
		if err := plan.AddRange(start, e.End-start, e.Digest); err != nil {
			return nil, [32]byte{}, err
		}
		start = e.End
	}
}
