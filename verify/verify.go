// Package verify is the verify engine: it checks snapshots of a datastore
// (manifest, blobs, and every chunk of every index archive through the
// restore pipeline into a Discard target) and reports what is damaged, by
// snapshot, archive, digest and byte range. Chunks shared between archives
// and snapshots are read and checked once per Verifier.
package verify

import (
	"context"
	"errors"
	"fmt"
	"path"
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
	Digest   string   `json:"digest"`
	Offsets  []uint64 `json:"offsets"`  // byte offsets in the archive
	Length   int      `json:"length"`   // bytes
	Location string   `json:"location"` // chunk file or object
	Error    string   `json:"error"`
}

// ArchiveResult is the verification result of one archive.
type ArchiveResult struct {
	Archive       string         `json:"archive"`
	OK            bool           `json:"ok"`
	Error         string         `json:"error,omitempty"`
	Size          uint64         `json:"size"`
	ChunksChecked uint64         `json:"chunks-checked,omitempty"`
	ChunksKnown   int            `json:"chunks-already-verified,omitempty"` // shared with an archive verified before
	CRCOnly       bool           `json:"crc-only,omitempty"`                // encrypted, no key: structure and CRC checked, not content
	Damaged       []DamagedChunk `json:"damaged-chunks,omitempty"`
}

// SnapshotResult is the verification result of one snapshot.
type SnapshotResult struct {
	Snapshot string          `json:"snapshot"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	Note     string          `json:"note,omitempty"`
	Skipped  bool            `json:"skipped,omitempty"` // removed while running (pruned since listed): no damage, not verified
	Archives []ArchiveResult `json:"archives"`
}

// Report is the result of a verify run.
type Report struct {
	OK        bool             `json:"ok"`
	Snapshots []SnapshotResult `json:"snapshots"`
	Seconds   float64          `json:"seconds"`
	Bytes     uint64           `json:"bytes"`             // archive bytes covered
	ExitCode  int              `json:"exit-code"`         // the process exit code, set by the command
	Skipped   []string         `json:"skipped,omitempty"` // snapshots removed while running (pruned since listed)
	// Stores says, with several stores (a chunkstore.Chain), how many
	// chunks each served and how many copies fell through; set by the
	// command.
	Stores []chunkstore.MemberStats `json:"stores,omitempty"`
}

// Add appends r to the report and updates OK and Bytes; a skipped
// snapshot (removed while running) is only listed in Skipped.
func (rep *Report) Add(r SnapshotResult) {
	if r.Skipped {
		rep.Skipped = append(rep.Skipped, r.Snapshot)
		return
	}
	rep.OK = rep.OK && r.OK
	for _, a := range r.Archives {
		rep.Bytes += a.Size
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
	// KeyFor, when set, gives the key for a snapshot from its manifest
	// instead of Key (so that a key is opened only for snapshots that are
	// encrypted or signed); it may be called concurrently. An error fails
	// that snapshot.
	KeyFor func(m *index.Manifest) (*crypto.Config, error)
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
	// outside is the first failure whose cause lies outside the data
	// (chunkstore.Outside): an archive was not checked, not found damaged.
	outside error
}

// note records an archive or snapshot failure and returns its message: the
// first one whose cause lies outside the data is kept for Outside.
func (v *Verifier) note(err error) string {
	if chunkstore.Outside(err) {
		v.mu.Lock()
		if v.outside == nil {
			v.outside = err
		}
		v.mu.Unlock()
	}
	return err.Error()
}

// Outside returns the first failure seen so far whose cause lies outside
// the data (store unreachable, credentials, throttling: chunkstore.Outside),
// or nil. Such an archive was not checked; retrying later may help.
func (v *Verifier) Outside() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.outside
}

// New returns a Verifier for store.
func New(store chunkstore.Store, opts Options) *Verifier {
	return &Verifier{store: store, opts: opts, verified: map[verifiedKey]bool{}}
}

// Snapshot checks the manifest of s and every archive listed in it. A
// failing archive does not stop the others; errors are reported in the
// result, never returned.
func (v *Verifier) Snapshot(ctx context.Context, s index.Snapshot) SnapshotResult {
	res := SnapshotResult{Snapshot: s.String(), OK: true}
	cc := v.opts.Key
	m, err := snapshot.ReadManifest(ctx, v.store, s)
	if err == nil && v.opts.KeyFor != nil {
		if cc, err = v.opts.KeyFor(m); err != nil {
			res.OK, res.Error = false, v.note(err)
			return res
		}
	}
	if err == nil {
		err = m.Check(cc)
	}
	noKey := cc == nil && errors.Is(err, index.ErrMissingKey)
	if noKey && !v.opts.CRCOnly {
		res.OK, res.Error = false, v.note(err)+" (give --keyfile, or --crc-only to check structure and CRC without the key)"
		return res
	}
	if noKey {
		// As PBS's own verify: without the key, encrypted data is checked
		// for structure and CRC; the manifest signature cannot be checked.
		res.Note = "no key: manifest signature not checked, encrypted archives checked by structure and CRC only (give --keyfile for a full check)"
	} else if err != nil {
		res.OK, res.Error = false, v.note(err)
		return res
	}
	for _, f := range m.Files {
		a := ArchiveResult{Archive: f.Filename, OK: true, Size: f.Size}
		unkeyed := cc == nil && v.opts.CRCOnly && f.CryptMode == index.CryptEncrypt
		switch {
		case strings.HasSuffix(f.Filename, ".blob") && unkeyed:
			a.CRCOnly = true
			if _, err := snapshot.CheckBlob(ctx, v.store, s, m, f.Filename); err != nil {
				a.OK, a.Error = false, v.note(err)
			}
		case strings.HasSuffix(f.Filename, ".blob"):
			if _, err := snapshot.ReadBlob(ctx, v.store, s, m, f.Filename, cc); err != nil {
				a.OK, a.Error = false, v.note(err)
			}
		default:
			v.index(ctx, s, m, f.Filename, cc, unkeyed, &a)
		}
		res.OK = res.OK && a.OK
		res.Archives = append(res.Archives, a)
	}
	return res
}

// index runs the restore pipeline for one index archive into a discard
// target, recording every damaged chunk.
func (v *Verifier) index(ctx context.Context, s index.Snapshot, m *index.Manifest, name string, cc *crypto.Config, unkeyed bool, a *ArchiveResult) {
	load := restore.LoadPlan
	if unkeyed {
		load = func(ctx context.Context, st chunkstore.Store, dir string, m *index.Manifest, name string, _ *crypto.Config) (*restore.Plan, *index.FileInfo, error) {
			return restore.LoadPlanUnkeyed(ctx, st, dir, m, name)
		}
	}
	plan, fi, err := load(ctx, v.store, s.Dir(), m, name, cc)
	if err != nil {
		a.OK, a.Error = false, v.note(err)
		return
	}
	opts := v.opts.Pipeline
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = cc
	opts.KeepGoing = true
	opts.CRCOnly = unkeyed
	a.CRCOnly = unkeyed
	opts.Archive = path.Join(s.Dir(), name)
	if !unkeyed {
		v.mu.Lock()
		a.ChunksKnown = plan.Drop(func(c *restore.Chunk) bool { return v.verified[verifiedKey{c.Digest, c.Length, opts.Encrypted}] })
		v.mu.Unlock()
	}
	var stats restore.Stats
	finish := func() {}
	if v.opts.Progress != nil {
		finish = v.opts.Progress(name, int64(plan.DataBytes()), func() int64 { return int64(stats.DataBytes.Load()) })
	}
	err = restore.Run(ctx, v.store, plan, restore.Discard{}, opts, &stats)
	finish()
	a.ChunksChecked = stats.Fetched.Load()
	bad := map[crypto.Digest]bool{}
	var de *restore.DamagedError
	switch {
	case errors.As(err, &de):
		a.OK, a.Error = false, fmt.Sprintf("%d damaged chunk(s)", len(de.Chunks))
		for _, c := range de.Chunks {
			bad[c.Digest] = true
			v.note(c.Err)
			a.Damaged = append(a.Damaged, DamagedChunk{Digest: c.Digest.String(), Offsets: c.Offsets, Length: c.Length, Location: c.Location, Error: c.Cause()})
		}
	case err != nil:
		a.OK, a.Error = false, v.note(err)
		return
	}
	if unkeyed {
		return // a CRC check is no proof of content
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, c := range plan.Chunks {
		if !bad[c.Digest] {
			v.verified[verifiedKey{c.Digest, c.Length, opts.Encrypted}] = true
		}
	}
}
