// Package verify is the verify engine: it checks snapshots of a datastore
// (manifest, blobs, and every chunk of every index archive through the
// restore pipeline into a Discard target) and reports what is damaged, by
// snapshot, archive, digest and byte range. Chunks shared between archives
// and snapshots are read and checked once per Verifier.
package verify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// DamagedChunk is one chunk that failed verification.
type DamagedChunk struct {
	Snapshot    string   `json:"snapshot,omitempty"` // only in the damaged-chunk list (Options.DamagedList)
	Archive     string   `json:"archive,omitempty"`  // only in the damaged-chunk list
	Digest      string   `json:"digest"`
	Offsets     []uint64 `json:"offsets"`                // byte offsets in the archive, the first MaxOffsets
	OffsetCount int      `json:"offset-count,omitempty"` // all offsets, when more than MaxOffsets
	Length      int      `json:"length"`                 // bytes
	Location    string   `json:"location"`               // chunk file or object
	Error       string   `json:"error"`
}

// MaxOffsets is the most offsets a DamagedChunk lists (as ChunkError's
// message); OffsetCount gives the number of all of them.
const MaxOffsets = 8

// DefaultMaxDamaged is the default number of damaged chunks a run reports
// in full; the others are counted (Options.MaxDamaged).
const DefaultMaxDamaged = 100

// ArchiveResult is the verification result of one archive.
type ArchiveResult struct {
	Archive       string         `json:"archive"`
	OK            bool           `json:"ok"`
	Error         string         `json:"error,omitempty"`
	Size          uint64         `json:"size"`
	ChunksChecked uint64         `json:"chunks-checked,omitempty"`
	ChunksKnown   int            `json:"chunks-already-verified,omitempty"` // shared with an archive verified before
	CRCOnly       bool           `json:"crc-only,omitempty"`                // encrypted, no key: structure and CRC checked, not content
	DamagedCount  int            `json:"damaged-count,omitempty"`           // damaged chunks, listed or not
	Damaged       []DamagedChunk `json:"damaged-chunks,omitempty"`          // the first ones of the run (Options.MaxDamaged), by offset
}

// SnapshotResult is the verification result of one snapshot.
type SnapshotResult struct {
	Snapshot string          `json:"snapshot"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	Note     string          `json:"note,omitempty"`
	Archives []ArchiveResult `json:"archives"`
}

// Report is the result of a verify run.
type Report struct {
	OK        bool             `json:"ok"`
	Snapshots []SnapshotResult `json:"snapshots"`
	Seconds   float64          `json:"seconds"`
	Bytes     uint64           `json:"bytes"` // archive bytes covered
	// DamagedChunks counts damaged chunks (per archive that uses them);
	// DamagedUnlisted those of them not listed in full (Options.MaxDamaged).
	DamagedChunks   int `json:"damaged-chunks"`
	DamagedUnlisted int `json:"damaged-chunks-unlisted,omitempty"`
}

// Add appends r to the report and updates OK and Bytes.
func (rep *Report) Add(r SnapshotResult) {
	rep.OK = rep.OK && r.OK
	for _, a := range r.Archives {
		rep.Bytes += a.Size
		rep.DamagedChunks += a.DamagedCount
		rep.DamagedUnlisted += a.DamagedCount - len(a.Damaged)
	}
	rep.Snapshots = append(rep.Snapshots, r)
}

// Failed returns the number of snapshots that are not OK.
func (rep *Report) Failed() int {
	n := 0
	for _, sr := range rep.Snapshots {
		if !sr.OK {
			n++
		}
	}
	return n
}

// Options configure a Verifier.
type Options struct {
	// Key decrypts encrypted archives and checks manifest signatures; nil
	// checks plain and sign-only archives only (and, with CRCOnly,
	// encrypted ones by structure and CRC).
	Key *crypto.Config
	// CRCOnly checks encrypted archives without a key by structure and CRC,
	// as PBS's own verify job does (no decryption, no digest check).
	CRCOnly bool
	// Pipeline tunes the restore pipeline (Jobs, Fetchers); Encrypted, Key,
	// KeepGoing, CRCOnly and Archive are set per archive.
	Pipeline restore.Options
	// Progress, when set, is called when an index archive's check starts
	// with its name, its data bytes and a function returning the bytes done
	// so far; the function it returns is called when the check ends.
	Progress func(name string, total int64, done func() int64) (finish func())
	// MaxDamaged is the number of damaged chunks the run lists in full in
	// its results; the rest are counted (ArchiveResult.DamagedCount). 0
	// means DefaultMaxDamaged, negative lists none.
	MaxDamaged int
	// DamagedList, when set, receives every damaged chunk as one JSON line
	// (a DamagedChunk with Snapshot and Archive), as it is found.
	DamagedList io.Writer
}

// verifiedKey identifies a chunk that passed verification: digests of
// encrypted and plain archives live in different spaces.
type verifiedKey struct {
	digest    crypto.Digest
	length    int // a digest verified at one length proves nothing at another
	encrypted bool
}

// Verifier checks snapshots of one store, remembering verified chunks so
// that chunks shared between archives and snapshots are read and checked
// once. It is safe for concurrent use.
type Verifier struct {
	store chunkstore.Store
	opts  Options

	mu       sync.Mutex
	verified map[verifiedKey]bool
	listed   int   // damaged chunks listed in full so far
	listErr  error // first error writing DamagedList
}

// New returns a Verifier for store.
func New(store chunkstore.Store, opts Options) *Verifier {
	if opts.MaxDamaged == 0 {
		opts.MaxDamaged = DefaultMaxDamaged
	}
	return &Verifier{store: store, opts: opts, verified: map[verifiedKey]bool{}}
}

// Err returns the first error writing Options.DamagedList, if any.
func (v *Verifier) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.listErr
}

// damaged records one damaged chunk of archive a of snapshot s: listed in
// full while the run's MaxDamaged allows, counted always, streamed to
// DamagedList when set.
func (v *Verifier) damaged(s index.Snapshot, a *ArchiveResult, c *restore.ChunkError) {
	d := DamagedChunk{Digest: c.Digest.String(), Offsets: c.Offsets, Length: c.Length, Location: c.Location, Error: c.Err.Error()}
	if len(d.Offsets) > MaxOffsets {
		d.OffsetCount = len(d.Offsets)
		d.Offsets = d.Offsets[:MaxOffsets:MaxOffsets]
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	a.DamagedCount++
	if v.listed < v.opts.MaxDamaged {
		v.listed++
		a.Damaged = append(a.Damaged, d)
	}
	if v.opts.DamagedList != nil && v.listErr == nil {
		d.Snapshot, d.Archive = s.String(), a.Archive
		b, err := json.Marshal(d)
		if err == nil {
			_, err = v.opts.DamagedList.Write(append(b, '\n'))
		}
		v.listErr = err
	}
}

// Snapshot checks the manifest of s and every archive listed in it. A
// failing archive does not stop the others; errors are reported in the
// result, never returned.
func (v *Verifier) Snapshot(ctx context.Context, s index.Snapshot) SnapshotResult {
	res := SnapshotResult{Snapshot: s.String(), OK: true}
	cc := v.opts.Key
	m, err := snapshot.ReadManifest(ctx, v.store, s)
	if err == nil {
		err = m.Check(cc)
	}
	noKey := cc == nil && errors.Is(err, index.ErrMissingKey)
	if noKey && !v.opts.CRCOnly {
		res.OK, res.Error = false, err.Error()+" (give --keyfile, or --crc-only to check structure and CRC without the key)"
		return res
	}
	if noKey {
		// As PBS's own verify: without the key, encrypted data is checked
		// for structure and CRC; the manifest signature cannot be checked.
		res.Note = "no key: manifest signature not checked, encrypted archives checked by structure and CRC only (give --keyfile for a full check)"
	} else if err != nil {
		res.OK, res.Error = false, err.Error()
		return res
	}
	for _, f := range m.Files {
		a := ArchiveResult{Archive: f.Filename, OK: true, Size: f.Size}
		unkeyed := cc == nil && v.opts.CRCOnly && f.CryptMode == index.CryptEncrypt
		switch {
		case strings.HasSuffix(f.Filename, ".blob") && unkeyed:
			a.CRCOnly = true
			if _, err := snapshot.CheckBlob(ctx, v.store, s, m, f.Filename); err != nil {
				a.OK, a.Error = false, err.Error()
			}
		case strings.HasSuffix(f.Filename, ".blob"):
			if _, err := snapshot.ReadBlob(ctx, v.store, s, m, f.Filename, cc); err != nil {
				a.OK, a.Error = false, err.Error()
			}
		default:
			v.index(ctx, s, m, f.Filename, unkeyed, &a)
		}
		res.OK = res.OK && a.OK
		res.Archives = append(res.Archives, a)
	}
	return res
}

// index runs the restore pipeline for one index archive into a discard
// target, recording every damaged chunk.
func (v *Verifier) index(ctx context.Context, s index.Snapshot, m *index.Manifest, name string, unkeyed bool, a *ArchiveResult) {
	load := restore.LoadPlan
	if unkeyed {
		load = func(ctx context.Context, st chunkstore.Store, dir string, m *index.Manifest, name string, _ *crypto.Config) (*restore.Plan, *index.FileInfo, error) {
			return restore.LoadPlanUnkeyed(ctx, st, dir, m, name)
		}
	}
	plan, fi, err := load(ctx, v.store, s.Dir(), m, name, v.opts.Key)
	if err != nil {
		a.OK, a.Error = false, err.Error()
		return
	}
	opts := v.opts.Pipeline
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = v.opts.Key
	opts.KeepGoing = true
	opts.CRCOnly = unkeyed
	a.CRCOnly = unkeyed
	opts.Archive = path.Join(s.Dir(), name)
	opts.Damaged = func(c *restore.ChunkError) { v.damaged(s, a, c) }
	if !unkeyed {
		v.mu.Lock()
		a.ChunksKnown = plan.Drop(func(c *restore.Chunk) bool { return v.verified[verifiedKey{c.Digest, c.Length, opts.Encrypted}] })
		v.mu.Unlock()
		// A CRC check is no proof of content: only keyed checks count.
		opts.Checked = func(c *restore.Chunk) {
			v.mu.Lock()
			v.verified[verifiedKey{c.Digest, c.Length, opts.Encrypted}] = true
			v.mu.Unlock()
		}
	}
	var stats restore.Stats
	finish := func() {}
	if v.opts.Progress != nil {
		finish = v.opts.Progress(name, int64(plan.DataBytes()), func() int64 { return int64(stats.DataBytes.Load()) })
	}
	err = restore.Run(ctx, v.store, plan, restore.Discard{}, opts, &stats)
	finish()
	a.ChunksChecked = stats.Fetched.Load()
	slices.SortFunc(a.Damaged, func(x, y DamagedChunk) int {
		return cmp.Or(cmp.Compare(first(x.Offsets), first(y.Offsets)), cmp.Compare(x.Digest, y.Digest))
	})
	var de *restore.DamagedError
	switch {
	case errors.As(err, &de):
		a.OK, a.Error = false, fmt.Sprintf("%d damaged chunk(s)", de.Count)
	case err != nil:
		a.OK, a.Error = false, err.Error()
	}
}

func first(offs []uint64) uint64 {
	if len(offs) == 0 {
		return 0
	}
	return offs[0]
}
