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
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Options configure a Verifier.
type Options struct {
	// Key decrypts encrypted archives and checks manifest signatures; nil
	// checks plain and sign-only archives only (and, with CRCOnly,
	// encrypted ones by structure and CRC).
	Key *crypto.Config
	// Keys, when set, gives the key for each snapshot from its manifest
	// instead of Key (snapshot.Keys.ForManifest: a default key file is
	// opened only for snapshots that are encrypted or signed) and applies
	// its signature policy (snapshot.Keys.CheckSigned). An error fails
	// that snapshot.
	Keys *snapshot.Keys
	// CRCOnly checks encrypted archives without a key by structure and CRC,
	// as PBS's own verify job does (no decryption, no digest check).
	CRCOnly bool
	// Pipeline tunes the restore pipeline (Jobs, Fetchers); Encrypted, Key,
	// KeepGoing, CRCOnly and Archive are set per archive. Run divides the
	// Fetchers among the snapshots it checks at once.
	Pipeline restore.Options
	// Parallel is the number of snapshots Run checks at once (manifests,
	// indexes, blobs and chunks of all of them in flight together); 0
	// means DefaultParallel.
	Parallel int
	// SkipRemoved reports a snapshot that failed because it was removed
	// while running (pruned since it was listed, snapshot.Gone) as skipped,
	// not damaged; otherwise it fails with snapshot.ErrRemoved.
	SkipRemoved bool
	// Shard, when Count > 1, checks only the chunks of shard Index.
	Shard Shard
	// State, when set, skips chunks it says were verified recently and
	// records the chunks verified now.
	State *State
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

// DefaultParallel is the default number of snapshots checked at once.
const DefaultParallel = 16

// chunkKey identifies a chunk: digests of encrypted and plain archives live
// in different spaces, and a digest verified at one length proves nothing
// at another.
type chunkKey struct {
	digest    crypto.Digest
	length    int32
	encrypted bool
}

func keyOf(c *restore.Chunk, encrypted bool) chunkKey {
	return chunkKey{c.Digest, int32(c.Length), encrypted}
}

// Chunk states in Verifier.chunks; a chunk not in the map is unchecked (or
// was found damaged: every archive using it checks it again, so that each
// reports it with its own byte ranges).
const (
	inFlight   uint8 = iota + 1 // claimed by an archive being checked
	verified                    // passed its check in this run
	present                     // fresh in the state, confirmed present in this run (not read)
	confirming                  // fresh in the state, its presence being confirmed (or found wanting)
)

// Verifier checks snapshots of one store, remembering verified chunks so
// that chunks shared between archives and snapshots are read and checked
// once. It is safe for concurrent use. Its memory grows with the distinct
// chunks verified: about 64 bytes each (a 100 TB store of 4 MiB chunks, 24 M
// chunks: 1.5 GiB; with Shard, 1/N of that per shard).
type Verifier struct {
	store chunkstore.Store
	opts  Options

	mu      sync.Mutex
	changed *sync.Cond // a chunk left the inFlight state
	chunks  map[chunkKey]uint8
	listed  int // damaged chunks listed in full so far
	// nFresh and nPresent count the distinct chunks skipped as fresh in the
	// state and confirmed present, for the report (an archive counts each
	// of its own).
	nFresh, nPresent int
	// badCopies holds the digests of the damaged chunks intact only in a
	// .bad copy, for the report's distinct count (an archive counts each
	// of its own).
	badCopies map[string]struct{}
	listErr   error // first error writing DamagedList
	// outside is the first failure that proves nothing about the data
	// (not restore.Proven): an archive was not checked, not found damaged.
	outside error
	// removed is the first snapshot removed while running when
	// SkipRemoved is off (it was named: the run fails with it).
	removed error
}

// Removed returns the error for a snapshot that was removed while running
// (wrapping snapshot.ErrRemoved) when Options.SkipRemoved is off, or nil.
func (v *Verifier) Removed() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.removed
}

// note records an archive or snapshot failure and returns its message: the
// first one that does not prove the data damaged or missing
// (restore.Proven) is kept for Outside.
func (v *Verifier) note(err error) string {
	// A key that needs a passphrase no source gave is no failure outside
	// the data either: the archive was not checked for want of its key,
	// as with no key at all (index.ErrMissingKey).
	if !restore.Proven(err) && !errors.Is(err, crypto.ErrPassphraseNeeded) {
		v.mu.Lock()
		if v.outside == nil {
			v.outside = err
		}
		v.mu.Unlock()
	}
	return err.Error()
}

// Outside returns the first failure seen so far that proves nothing about
// the data (not restore.Proven: store unreachable, credentials refused or
// expired, throttling, a status the store did not classify, local I/O), or
// nil. Such an archive was not checked; retrying later may help.
func (v *Verifier) Outside() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.outside
}

// New returns a Verifier for store.
func New(store chunkstore.Store, opts Options) *Verifier {
	if opts.MaxDamaged == 0 {
		opts.MaxDamaged = DefaultMaxDamaged
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	v := &Verifier{store: store, opts: opts, chunks: map[chunkKey]uint8{}}
	v.changed = sync.NewCond(&v.mu)
	return v
}

// Err returns the first error writing Options.DamagedList, if any.
func (v *Verifier) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.listErr
}

// Run checks snaps, Options.Parallel at a time, and returns the report
// (Version, counts, Snapshots, Started, Finished, Seconds, OK and ExitCode
// set; Store, Namespaces, Shard and Host are the caller's). each, when set,
// is called with every snapshot's result in the order of snaps, from one
// goroutine at a time. When ctx ends, Run returns what it has and ctx's
// error.
func (v *Verifier) Run(ctx context.Context, snaps []index.Snapshot, each func(SnapshotResult)) (Report, error) {
	start := time.Now()
	v.mu.Lock()
	fresh0, present0, bad0 := v.nFresh, v.nPresent, len(v.badCopies)
	v.mu.Unlock()
	rep := Report{Version: ReportVersion, OK: true, Started: start.UTC().Format(time.RFC3339), Snapshots: []SnapshotResult{}}
	par := min(v.opts.Parallel, max(len(snaps), 1))
	if par > 1 && v.opts.Pipeline.Fetchers > par {
		// The reads in flight are shared by the snapshots checked at once.
		v.opts.Pipeline.Fetchers = (v.opts.Pipeline.Fetchers + par - 1) / par
	}
	results := make([]*SnapshotResult, len(snaps))
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, par)
	for i, s := range snaps {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r := v.Snapshot(ctx, s)
			switch gone := !r.OK && snapshot.Gone(ctx, v.store, s); {
			case gone && v.opts.SkipRemoved:
				r = SnapshotResult{Snapshot: r.Snapshot, OK: true, Skipped: true, Note: "removed while running (pruned since it was listed): skipped", Archives: []ArchiveResult{}}
			case gone:
				err := fmt.Errorf("snapshot %s in %s: %w", s, v.store, snapshot.ErrRemoved)
				r = SnapshotResult{Snapshot: r.Snapshot, Error: err.Error(), Archives: []ArchiveResult{}}
				v.mu.Lock()
				v.removed = cmp.Or(v.removed, err)
				v.mu.Unlock()
			}
			mu.Lock()
			defer mu.Unlock()
			results[i] = &r
			for next < len(results) && results[next] != nil {
				rep.Add(*results[next])
				if each != nil {
					each(*results[next])
				}
				results[next] = nil
				next++
			}
		})
	}
	wg.Wait()
	// The archives count each chunk of theirs skipped as fresh; the report
	// counts distinct chunks, as it does those checked.
	v.mu.Lock()
	rep.ChunksFresh, rep.ChunksPresent = v.nFresh-fresh0, v.nPresent-present0
	rep.BadCopyChunks = len(v.badCopies) - bad0
	v.mu.Unlock()
	end := time.Now()
	rep.Finished, rep.Seconds = end.UTC().Format(time.RFC3339), end.Sub(start).Seconds()
	if !rep.OK {
		rep.ExitCode = 1
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

// DamagedChunkOf returns the report entry of the chunk c that failed
// (its cause as ChunkError.Cause, its first MaxOffsets offsets).
// positions, when more than c's offsets, is the number of all the chunk's
// positions in the archive.
func DamagedChunkOf(c *restore.ChunkError, positions int) DamagedChunk {
	d := DamagedChunk{Digest: c.Digest.String(), Offsets: c.Offsets, Length: c.Length, Location: c.Location, Error: c.Cause(),
		Missing: errors.Is(c.Err, chunkstore.ErrNotFound)}
	var bc *restore.BadCopyError
	if errors.As(c.Err, &bc) {
		d.BadCopy = bc.Copy
	}
	if n := max(len(d.Offsets), positions); n > MaxOffsets {
		d.OffsetCount = n
		m := min(len(d.Offsets), MaxOffsets)
		d.Offsets = d.Offsets[:m:m]
	}
	return d
}

// damaged records one damaged chunk of archive a of snapshot s: listed in
// full while the run's MaxDamaged allows, counted always, streamed to
// DamagedList when set.
//
// positions, when more than c's offsets, is the number of all the chunk's
// positions in the archive (the zero chunk's plan lists only the first).
func (v *Verifier) damaged(s index.Snapshot, a *ArchiveResult, c *restore.ChunkError, positions int) {
	d := DamagedChunkOf(c, positions)
	v.note(c.Err)
	v.mu.Lock()
	defer v.mu.Unlock()
	a.DamagedCount++
	if d.BadCopy != "" {
		a.BadCopyCount++
		if v.badCopies == nil {
			v.badCopies = map[string]struct{}{}
		}
		v.badCopies[d.Digest] = struct{}{}
	}
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

// keyStatus records in res that its snapshot was not checked for want of
// its key, when err says so (a snapshot.KeyError, index.ErrMissingKey or
// index.ErrWrongKey): a status (SnapshotResult.Status), the manifest's key
// fingerprint, the key file not opened and whether its passphrase was
// refused, not OK and no damage. It reports whether it did.
func keyStatus(res *SnapshotResult, err error) bool {
	var ke *snapshot.KeyError
	switch {
	case errors.As(err, &ke):
		res.Status = ke.Status
		if ke.Fingerprint != (crypto.Fingerprint{}) {
			res.KeyFingerprint = ke.Fingerprint.String()
		}
		if ke.Status == snapshot.KeyUnopened {
			res.KeyFile = ke.File
			for _, f := range ke.Tried() {
				res.KeyFiles = append(res.KeyFiles, KeyFileResult{File: f.File, Reason: f.Reason, Error: f.Err.Error()})
				if f.Reason == snapshot.KeyReasonPassphrase && !res.PassphraseRefused {
					// The summing-up pair names a file refused.
					res.KeyFile, res.PassphraseRefused = f.File, true
				}
			}
		}
	case errors.Is(err, index.ErrMissingKey):
		res.Status = snapshot.KeyMissing
	case errors.Is(err, index.ErrWrongKey):
		res.Status = snapshot.KeyMismatch
	default:
		return false
	}
	res.OK, res.Error = false, err.Error()
	return true
}

// Snapshot checks the manifest of s and every archive listed in it. A
// failing archive does not stop the others; errors are reported in the
// result, never returned.
func (v *Verifier) Snapshot(ctx context.Context, s index.Snapshot) SnapshotResult {
	res := SnapshotResult{Snapshot: s.String(), OK: true, Archives: []ArchiveResult{}}
	// Opened without keys: the key policy below is verify's own (a
	// snapshot without its key is checked by structure and CRC).
	src, err := snapshot.OpenSnapshot(ctx, v.store, s, nil)
	cc := v.opts.Key
	if err == nil && v.opts.Keys != nil {
		cc, err = v.opts.Keys.ForManifest(src.Manifest())
		var ke *snapshot.KeyError
		if errors.As(err, &ke) && ke.Status != snapshot.KeyUnopened && v.opts.CRCOnly {
			cc, err = nil, nil // checked without the key, as with none given
		}
		if err == nil {
			err = v.opts.Keys.CheckSigned(src.Manifest(), s, cc)
		}
		if err != nil {
			if !keyStatus(&res, err) {
				res.OK, res.Error = false, v.note(err)
			} else if res.Status != snapshot.KeyUnopened {
				res.Error += " (or --crc-only to check structure and CRC without the key)"
			}
			return res
		}
	}
	if err == nil {
		err = src.Manifest().Check(cc)
	}
	noKey := cc == nil && errors.Is(err, index.ErrMissingKey)
	if noKey && !v.opts.CRCOnly {
		keyStatus(&res, err)
		res.Error += " (give --keyfile, or --crc-only to check structure and CRC without the key)"
		return res
	}
	if !noKey && keyStatus(&res, err) {
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
	src = src.WithKey(cc)
	for _, f := range src.Manifest().Files {
		a := ArchiveResult{Archive: f.Filename, OK: true, Size: f.Size}
		unkeyed := cc == nil && v.opts.CRCOnly && f.CryptMode == index.CryptEncrypt
		switch {
		case strings.HasSuffix(f.Filename, ".blob") && unkeyed:
			a.CRCOnly = true
			if _, err := src.CheckedBlob(ctx, f.Filename); err != nil {
				a.OK, a.Error = false, v.note(err)
			}
		case strings.HasSuffix(f.Filename, ".blob"):
			if _, err := src.Blob(ctx, f.Filename); err != nil {
				a.OK, a.Error = false, v.note(err)
			}
		default:
			v.index(ctx, src, f.Filename, unkeyed, &a)
		}
		res.OK = res.OK && a.OK
		res.Archives = append(res.Archives, a)
	}
	return res
}

// index runs the restore pipeline for one index archive into a discard
// target, recording every damaged chunk. Chunks verified for another
// archive of the run, left to other shards or fresh in the state are not
// read; chunks another archive is checking right now are waited for
// afterwards, and checked here if they did not pass there. The zero chunk
// a fixed index refers to by digest, which a restore never reads (its
// content is known), is checked too, as any chunk: the store must hold it
// for other clients (zeroPlan).
func (v *Verifier) index(ctx context.Context, src *snapshot.Reader, name string, unkeyed bool, a *ArchiveResult) {
	s, m, cc := src.Snapshot(), src.Manifest(), src.Key()
	var (
		plan *restore.Plan
		fi   *index.FileInfo
		err  error
	)
	// The indexes come from the chain member that holds the manifest
	// (the Reader's files), the chunks from the whole store.
	if unkeyed {
		plan, fi, err = restore.LoadPlanUnkeyed(ctx, src, s.Dir(), m, name)
	} else {
		plan, fi, err = restore.LoadPlan(ctx, src, s.Dir(), m, name, cc)
	}
	if err != nil {
		a.OK, a.Error = false, v.note(err)
		return
	}
	opts := v.opts.Pipeline
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = cc
	opts.KeepGoing = true
	// A chunk intact only in a .bad copy is restorable by pbsdirect, not
	// by PBS: damage to report, with the copy named.
	opts.BadCopyIsDamage = true
	opts.CRCOnly = unkeyed
	a.CRCOnly = unkeyed
	opts.Archive = path.Join(s.Dir(), name)
	zero, positions := zeroPlan(plan)
	var stats, zstats restore.Stats
	finish := func() {}
	if v.opts.Progress != nil {
		finish = v.opts.Progress(name, int64(plan.DataBytes()), func() int64 { return int64(stats.DataBytes.Load()) })
	}
	err = v.check(ctx, s, plan, 0, opts, unkeyed, a, &stats)
	if zero != nil && ctx.Err() == nil {
		err = worse(err, v.check(ctx, s, zero, positions, opts, unkeyed, a, &zstats))
	}
	finish()
	a.ChunksChecked = stats.Fetched.Load() + zstats.Fetched.Load()
	slices.SortFunc(a.Damaged, func(x, y DamagedChunk) int {
		return cmp.Or(cmp.Compare(first(x.Offsets), first(y.Offsets)), cmp.Compare(x.Digest, y.Digest))
	})
	var de *restore.DamagedError
	switch {
	case errors.As(err, &de):
		a.OK, a.Error, a.DamageError = false, DamageSummary(a.DamagedCount), true
	case err != nil:
		a.OK, a.Error = false, v.note(err)
	}
}

// zeroPlan returns a plan of the one chunk that plan's zero ranges stand
// for: the zero chunk of its chunk size, plain or keyed as plan's
// ZeroDigest, which restore.Run never reads but a PBS client restoring the
// archive does. The plan lists the offsets of the first MaxOffsets+1 zero
// positions (what a damage report lists), not of all of them, so that its
// memory does not grow with a sparse image's size; positions is the
// number of all. It returns nil, 0 when plan has no zero ranges (a dynamic
// index, an image without zero chunks, an encrypted archive checked
// without its key, whose zero chunks are ordinary chunks of its plan).
func zeroPlan(plan *restore.Plan) (zero *restore.Plan, positions int) {
	if len(plan.Zero) == 0 || plan.ChunkSize == 0 {
		return nil, 0
	}
	n := plan.ZeroBytes / plan.ChunkSize
	listed := min(n, MaxOffsets+1)
	// Chunk size 0: the zero digest is not recomputed; the one chunk is
	// added as a range.
	zero = restore.NewPlan(listed*plan.ChunkSize, 0, nil)
	added := uint64(0)
	for _, z := range plan.Zero {
		for off := z.Offset; off < z.Offset+z.Length && added < listed; off += plan.ChunkSize {
			if err := zero.AddRange(off, plan.ChunkSize, plan.ZeroDigest); err != nil {
				panic(err) // one digest, one length, few offsets: cannot fail
			}
			added++
		}
	}
	zero.Finish()
	return zero, int(n)
}

// worse returns the error of two steps of one check that matters more:
// one that is not damage wins over damage, any over none.
func worse(err, err2 error) error {
	var de *restore.DamagedError
	if err == nil || (err2 != nil && errors.As(err, &de) && !errors.As(err2, &de)) {
		return err2
	}
	return err
}

// check checks the chunks of plan, of archive a of snapshot s, counting
// them in a and stats: those of other shards, verified in this run or
// fresh in the state are dropped (fresh ones confirmed present), the
// others read and checked once per run. positions, when not 0, is the
// number of positions of plan's chunk in the archive, of which plan lists
// only the first (zeroPlan). It returns a *restore.DamagedError when any
// chunk was damaged, or why the check could not be done.
func (v *Verifier) check(ctx context.Context, s index.Snapshot, plan *restore.Plan, positions int, opts restore.Options, unkeyed bool, a *ArchiveResult, stats *restore.Stats) error {
	opts.Damaged = func(c *restore.ChunkError) { v.damaged(s, a, c, positions) }
	var (
		waitFor []restore.Chunk       // being checked for another archive
		claimed = map[chunkKey]bool{} // claimed here and not resolved: as many as reads in flight
	)
	now := time.Now()
	var fresh []restore.Chunk // skipped as fresh: their presence is confirmed
	if unkeyed {
		// A CRC check is no proof of content: only keyed checks count, and
		// CRC-only archives check all the chunks of their shard.
		plan.Drop(func(c *restore.Chunk) bool {
			if !v.opts.Shard.Has(c.Digest) {
				a.ChunksOther++
				return true
			}
			return false
		})
	} else {
		v.mu.Lock()
		plan.Drop(func(c *restore.Chunk) bool {
			switch k := keyOf(c, opts.Encrypted); {
			case !v.opts.Shard.Has(c.Digest):
				a.ChunksOther++
			case v.chunks[k] == verified:
				a.ChunksKnown++
			case !v.opts.State.Fresh(c.Digest, c.Length, opts.Encrypted, now):
				return false
			case v.chunks[k] == present:
				a.ChunksFresh++
				a.ChunksPresent++
			default:
				a.ChunksFresh++
				if v.chunks[k] == 0 {
					// First skipped as fresh in this run: counted once
					// in the report (Verifier.nFresh).
					v.chunks[k] = confirming
					v.nFresh++
				}
				fresh = append(fresh, *c)
			}
			return true
		})
		v.mu.Unlock()
		// A chunk is claimed when it is about to be read, so that the
		// claims are as many as the reads in flight, not the chunks.
		opts.Skip = func(c *restore.Chunk) bool {
			k := keyOf(c, opts.Encrypted)
			v.mu.Lock()
			defer v.mu.Unlock()
			switch v.chunks[k] {
			case verified:
				a.ChunksKnown++
				return true
			case inFlight:
				if !claimed[k] {
					waitFor = append(waitFor, *c)
					return true
				}
			}
			v.chunks[k] = inFlight
			claimed[k] = true
			return false
		}
		opts.Checked = func(c *restore.Chunk) {
			k := keyOf(c, opts.Encrypted)
			v.mu.Lock()
			v.chunks[k] = verified
			delete(claimed, k)
			v.mu.Unlock()
			v.changed.Broadcast()
			v.opts.State.Verified(c.Digest, c.Length, opts.Encrypted, now)
		}
		opts.Damaged = func(c *restore.ChunkError) {
			k := chunkKey{c.Digest, int32(c.Length), opts.Encrypted}
			v.mu.Lock()
			if claimed[k] {
				delete(v.chunks, k)
				delete(claimed, k)
			}
			v.mu.Unlock()
			v.changed.Broadcast()
			v.opts.State.Forget(c.Digest, c.Length, opts.Encrypted)
			v.damaged(s, a, c, positions)
		}
	}
	err := v.confirm(ctx, s, plan, fresh, positions, opts, a)
	if ctx.Err() == nil {
		err = worse(err, v.run(ctx, plan, opts, stats, claimed))
	}
	if ctx.Err() == nil && len(waitFor) > 0 {
		// What others were checking: count it if it passed, check it here
		// if it did not (damaged chunks are reported by every archive that
		// uses them, with its own ranges).
		v.mu.Lock()
		// Wait, holding no claim (so two archives never wait for each
		// other), until none of them is in flight, then take them in one
		// pass under the lock.
		for busy := true; busy; {
			busy = false
			for i := range waitFor {
				if v.chunks[keyOf(&waitFor[i], opts.Encrypted)] == inFlight {
					busy = true
					v.changed.Wait()
					break
				}
			}
		}
		plan.Chunks = plan.Chunks[:0]
		for _, c := range waitFor {
			k := keyOf(&c, opts.Encrypted)
			if v.chunks[k] == verified {
				a.ChunksKnown++
				continue
			}
			v.chunks[k] = inFlight
			claimed[k] = true
			plan.Chunks = append(plan.Chunks, c)
		}
		waitFor = nil
		v.mu.Unlock()
		if len(plan.Chunks) > 0 {
			err = worse(err, v.run(ctx, plan, opts, stats, claimed))
		}
	}
	return err
}

// run runs plan and then gives up the claims it left unresolved (a run
// that stopped early), waking archives waiting for them.
func (v *Verifier) run(ctx context.Context, plan *restore.Plan, opts restore.Options, stats *restore.Stats, claimed map[chunkKey]bool) error {
	err := restore.Run(ctx, v.store, plan, restore.Discard{}, opts, stats)
	v.mu.Lock()
	for k := range claimed {
		if v.chunks[k] == inFlight {
			delete(v.chunks, k)
		}
		delete(claimed, k)
	}
	v.mu.Unlock()
	v.changed.Broadcast()
	return err
}

func first(offs []uint64) uint64 {
	if len(offs) == 0 {
		return 0
	}
	return offs[0]
}
