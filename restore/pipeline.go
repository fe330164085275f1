package restore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// Options tune the pipeline. Zero values pick defaults.
type Options struct {
	// Jobs is the number of chunks decoded at once: each job decodes and
	// verifies one chunk at a time (CRC, AES-256-GCM, zstd, digest), CPU
	// bound. Default: DefaultJobs, one per core.
	Jobs int
	// Writers is the number of verified chunks written at once, by writer
	// goroutines that take them from the jobs, so that the jobs decode on
	// while writes wait for the disk. 0: each job writes its own chunk
	// before decoding the next; with Jobs = 1 that is the sequential restore
	// (read, decode, write, next chunk). Default 0; the pbsdirect command
	// passes DefaultWriters.
	Writers int
	// Fetchers is the number of chunk reads in flight ahead of the jobs
	// (I/O bound); default Jobs for a local store; callers pass tens for buckets.
	Fetchers int
	// RateLimit, when set, is the limiter the store reads through
	// (--rate, --burst, --rate-requests): the store applies it, Summary
	// reports it.
	RateLimit *ratelimit.Limiter
	// Encrypted is the archive's crypt mode from the manifest: true requires
	// every chunk to be encrypted, false requires every chunk to be plain (§2.5).
	Encrypted bool
	// Key decrypts chunks and keys their digests; required when Encrypted.
	Key *crypto.Config
	// KeepGoing records damaged chunks and continues (verify); otherwise the
	// first failure stops the run.
	KeepGoing bool
	// Damaged, with KeepGoing, receives each damaged chunk as it is found,
	// one call at a time, instead of the DamagedError collecting them (it
	// then only counts them): memory stays bounded however many chunks are
	// damaged.
	Damaged func(*ChunkError)
	// MaxListed, with KeepGoing and no Damaged, is how many damaged
	// chunks the *DamagedError lists (by offset; it counts them all);
	// 0 lists every one.
	MaxListed int
	// Held, when set, is called by RunResume for each durable chunk found
	// whole on the target (concurrently), not fetched again.
	Held func(*Chunk)
	// HeldAt, when set, is asked by the writes, concurrently, for each
	// offset of a chunk: true says that the target holds the chunk there
	// already (a differential restore read it back), and it is not
	// written there.
	HeldAt func(c *Chunk, off uint64) bool
	// Checked, when set, is called by the jobs, concurrently, for every
	// chunk that passed its check (before it is written).
	Checked func(*Chunk)
	// Skip, when set, is called by a fetcher before it reads a chunk, from
	// several goroutines at once; true leaves the chunk out (not read, not
	// written: for verify, whose target is Discard).
	Skip func(*Chunk) bool
	// CRCOnly checks encrypted chunks without their key, as PBS's own verify
	// does: blob structure, encrypted magic and CRC, no decryption and no
	// digest (verify with Discard only; nothing is written).
	CRCOnly bool
	// Archive names the archive in errors, e.g. "vm/100/<time>/drive-scsi0.img.fidx".
	Archive string
	// OnMissing is what a restore does with a chunk that no store has
	// (missing, 0-byte), OnCorrupt with one whose every copy fails its
	// check: DamageFail (the default) stops the restore; DamageZero makes
	// exactly the chunk's byte ranges read as zeros and goes on, and Run
	// returns a *DamagedError with Zeroed set once the target is synced. A
	// chunk that could not be read for a reason outside the data
	// (chunkstore.Outside: store unavailable) always fails.
	OnMissing, OnCorrupt Damage
	// BadCopyIsDamage (verify) reports a chunk that is intact only in a
	// copy kept aside as damaged (a ".bad" copy, which PBS never reads) as
	// a *BadCopyError; otherwise (restore) that copy is used. Either way
	// such a chunk is looked for only once every ordinary copy failed, and
	// is recorded in Stats.Salvaged.
	BadCopyIsDamage bool
	// Journal, when set, records every chunk once it is written to all its
	// offsets and the target synced (Journal.Flush, at least every
	// JournalInterval and when Run returns, whatever the outcome), so that
	// an interrupted restore can resume. With a Journal, a damaged chunk
	// under DamageFail does not stop the run at once: the other chunks are
	// restored and journaled, and Run returns a *DamagedError (Zeroed
	// false) listing the damaged ones; more than MaxDamagedGoingOn damaged
	// chunks stop it as without a Journal.
	Journal *Journal
}

// MaxDamagedGoingOn is how many damaged chunks a journaled restore under
// DamageFail records while it goes on restoring the others (see
// Options.Journal); the next one stops the run.
const MaxDamagedGoingOn = 64

// JournalInterval is how often Run makes the chunks written so far durable
// and journals them.
const JournalInterval = 500 * time.Millisecond

// Damage is a damage policy: what a restore does with a chunk it cannot
// restore.
type Damage int

const (
	// DamageFail stops the restore.
	DamageFail Damage = iota
	// DamageZero writes zeros for the chunk's byte ranges and goes on.
	DamageZero
)

// ParseDamage parses "fail" or "zero".
func ParseDamage(s string) (Damage, error) {
	switch s {
	case "fail":
		return DamageFail, nil
	case "zero":
		return DamageZero, nil
	}
	return DamageFail, fmt.Errorf("want fail or zero, not %q", s)
}

// DefaultJobs is the default number of jobs: GOMAXPROCS (the cores Go
// uses), at most 32. More jobs than cores only take turns on them.
func DefaultJobs() int { return min(32, runtime.GOMAXPROCS(0)) }

// DefaultWriters is the default number of writers for jobs jobs: max(4,
// jobs / 2), enough O_DIRECT writes in flight to keep a disk busy (ext4 and
// XFS run them concurrently into reserved space; see Allocator).
// Writers block in write system calls: run with GOMAXPROCS at least jobs +
// writers, or a blocked writer keeps a P the jobs need for up to 10 ms
// (bench/README.md).
func DefaultWriters(jobs int) int { return max(4, jobs/2) }

// Stats counts a run's work. Fields are updated atomically while it runs;
// read them with the Load methods.
type Stats struct {
	DataBytes    atomic.Uint64 // non-zero image bytes written (each offset counted)
	ZeroBytes    atomic.Uint64 // image bytes covered by zero chunks, never fetched
	FetchedBytes atomic.Uint64 // encoded chunk bytes read from the store
	Fetched      atomic.Uint64 // unique chunks fetched and verified
	DedupHits    atomic.Uint64 // extra offsets served from an already fetched chunk
	Failed       atomic.Uint64 // chunks that failed a check
	DamagedBytes atomic.Uint64 // image bytes of damaged chunks written as zeros (DamageZero)
	// Salvaged records the chunks recovered from copies kept aside as
	// damaged (".bad" copies) after every ordinary copy failed.
	Salvaged SalvageLog
}

// ChunkError is a chunk that could not be restored: its digest, the byte
// offsets it fills, where it was read from, and why.
type ChunkError struct {
	Digest   crypto.Digest
	Length   int
	Offsets  []uint64
	Location string
	Err      error
}

// Error names the chunk's digest, its byte ranges, where it was read from and why it failed.
func (e *ChunkError) Error() string {
	var offs []string
	for i, o := range e.Offsets {
		if i == 8 {
			offs = append(offs, fmt.Sprintf("… (%d offsets)", len(e.Offsets)))
			break
		}
		offs = append(offs, fmt.Sprintf("[%d,%d)", o, o+uint64(e.Length)))
	}
	return fmt.Sprintf("chunk %s at %s: %s", e.Digest, strings.Join(offs, " "), e.Cause())
}

// firstOffset is c's first offset in the image (0 for none).
func firstOffset(c *ChunkError) uint64 {
	if len(c.Offsets) == 0 {
		return 0
	}
	return c.Offsets[0]
}

// Missing reports whether the chunk is missing (no store has it, or its
// file is empty) rather than damaged (read, and failed a check): the
// split of --on-missing and --on-corrupt.
func (e *ChunkError) Missing() bool {
	return !chunkstore.Damaged(e.Err) || errors.Is(e.Err, chunkstore.ErrEmpty)
}

// Cause says why the chunk failed, naming the file or object it was read
// from once, without the digest and byte ranges (Error adds those).
func (e *ChunkError) Cause() string {
	msg := strings.TrimPrefix(e.Err.Error(), "chunk "+e.Digest.String()+": ")
	if chunkstore.NamesLocation(e.Err, e.Location) {
		// The store's error already names the file or object.
		return msg
	}
	return e.Location + ": " + msg
}

// Unwrap returns the cause, for errors.Is (chunkstore.ErrNotFound,
// chunkstore.ErrDigestMismatch, …).
func (e *ChunkError) Unwrap() error { return e.Err }

// DamagedError is returned by Run with KeepGoing when chunks failed, and
// with a DamageZero policy when chunks were written as zeros (Zeroed: the
// rest of the image is restored, verified and synced).
type DamagedError struct {
	Archive string
	Chunks  []*ChunkError // empty when Options.Damaged took them
	Count   int           // damaged chunks
	Zeroed  bool
}

// Ranges returns the byte ranges of the damaged chunks, sorted, with
// adjacent and overlapping ones merged.
func (e *DamagedError) Ranges() []Range {
	var rs []Range
	for _, c := range e.Chunks {
		for _, o := range c.Offsets {
			rs = append(rs, Range{Offset: o, Length: uint64(c.Length)})
		}
	}
	return MergeRanges(rs)
}

// MergeRanges sorts rs by offset and merges adjacent and overlapping
// ranges; it reuses rs's array.
func MergeRanges(rs []Range) []Range {
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.Offset, b.Offset) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Length >= r.Offset {
			out[n-1].Length = max(out[n-1].Length, r.Offset+r.Length-out[n-1].Offset)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Error lists every damaged or missing chunk it holds, one per line after
// the first, which counts them by kind ("1 damaged and 2 missing
// chunk(s)"; "N damaged or missing chunk(s)" when it holds not all).
func (e *DamagedError) Error() string {
	var b strings.Builder
	if e.Zeroed {
		var n uint64
		for _, r := range e.Ranges() {
			n += r.Length
		}
		fmt.Fprintf(&b, "%s: restored with damage: %s, %d bytes written as zeros", e.Archive, e.Kinds(), n)
	} else {
		fmt.Fprintf(&b, "%s: %s", e.Archive, e.Kinds())
	}
	for _, c := range e.Chunks {
		b.WriteString("\n  ")
		b.WriteString(c.Error())
	}
	return b.String()
}

// Kinds counts the chunks by kind: "2 damaged chunk(s)", "1 missing
// chunk(s)", "1 damaged and 1 missing chunk(s)", or, when e holds not every
// chunk it counts, "N damaged or missing chunk(s)".
func (e *DamagedError) Kinds() string {
	n := max(e.Count, len(e.Chunks))
	if n > len(e.Chunks) {
		return fmt.Sprintf("%d damaged or missing chunk(s)", n)
	}
	missing := 0
	for _, c := range e.Chunks {
		if c.Missing() {
			missing++
		}
	}
	switch damaged := n - missing; {
	case missing == 0:
		return fmt.Sprintf("%d damaged chunk(s)", damaged)
	case damaged == 0:
		return fmt.Sprintf("%d missing chunk(s)", missing)
	default:
		return fmt.Sprintf("%d damaged and %d missing chunk(s)", damaged, missing)
	}
}

type fetched struct {
	chunk  *Chunk
	raw    []byte
	buf    []byte // pool buffer backing raw
	member int    // the chain member raw came from (0 without a chain)
	err    error  // why no copy could be read (raw nil): missing or damaged (chunkstore.Proven)
}

// Run executes plan against store, writing into target, and returns when
// every chunk was written and the target synced, or on the first error (with
// KeepGoing: after all chunks, with a *DamagedError listing failed chunks).
// Zero ranges are handed to target.Zero and never fetched. Fetchers read
// encoded chunks ahead; each job decodes and verifies one into an aligned
// buffer, and it or a writer writes it to all its offsets. Memory use is
// bounded by (max(Fetchers, 2 × Jobs) + Jobs + 2 × Writers + 2) × (chunk
// size + 8 KiB).
func Run(ctx context.Context, store chunkstore.Store, plan *Plan, target Target, opts Options, stats *Stats) error {
	if opts.Encrypted && opts.Key == nil && !opts.CRCOnly {
		return fmt.Errorf("%s: archive is encrypted: a key is needed (--keyfile)", opts.Archive)
	}
	if opts.CRCOnly {
		if d, ok := target.(Discarder); !ok || !d.Discards() {
			return fmt.Errorf("%s: CRC-only checking writes nothing: use the Discard target", opts.Archive)
		}
	}
	if !opts.Encrypted {
		opts.Key = nil // plain digests for none and sign-only
	}
	opts.setCounts()
	if stats == nil {
		stats = new(Stats)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	errs := &runErrors{cancel: cancel}
	chain, _ := store.(chunkstore.FallThrough)
	dp := &damagePolicy{opts: &opts, plan: plan, store: store, target: target, stats: stats, errs: errs}

	// Zero ranges first: cheap, and a device gets them offloaded.
	for _, z := range plan.Zero {
		if err := target.Zero(int64(z.Offset), int64(z.Length)); err != nil {
			return err
		}
		stats.ZeroBytes.Add(z.Length)
	}
	if len(plan.Chunks) == 0 {
		return target.Sync()
	}
	// Then reserve where the data goes: a full file system fails here,
	// before any chunk is fetched, and the writes become overwrites.
	if alloc, ok := target.(Allocator); ok && !plan.dropped {
		for r := range plan.DataRanges() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := alloc.Allocate(int64(r.Offset), int64(r.Length)); err != nil {
				return err
			}
		}
	}

	maxLen := plan.maxChunk()
	rawPool, dataPool, err := newPools(opts, maxLen)
	if err != nil {
		return err
	}
	defer rawPool.close()
	defer dataPool.close()

	// One decoder per job, all made before any goroutine starts, so that a
	// failure here leaves nothing running. Bounded decompression: a hostile
	// frame cannot make a job allocate more than this; 8 MiB at least, as
	// zstd windows (up to 8 MiB for ordinary levels) must fit in the limit
	// even for small chunks.
	decoders := make([]*chunkstore.Decoder, 0, opts.Jobs)
	defer func() {
		for _, d := range decoders {
			d.Close()
		}
	}()
	for range opts.Jobs {
		dec, err := chunkstore.NewDecoderLimit(max(maxLen, 8<<20))
		if err != nil {
			return err
		}
		decoders = append(decoders, dec)
	}

	done := ctx.Done()
	work := make(chan *Chunk)
	fetchedCh := make(chan fetched, opts.Jobs)

	go func() {
		defer close(work)
		for i := range plan.Chunks {
			select {
			case work <- &plan.Chunks[i]:
			case <-done:
				return
			}
		}
	}()

	var fetchWG sync.WaitGroup
	for range opts.Fetchers {
		fetchWG.Go(func() {
			for c := range work {
				if opts.Skip != nil && opts.Skip(c) {
					continue
				}
				buf := rawPool.get(done)
				if buf == nil {
					return
				}
				var raw []byte
				var member int
				var err error
				at := buf[rawAt(opts.Encrypted):rawAt(opts.Encrypted)]
				if chain != nil {
					raw, member, err = chain.ReadChunkFrom(ctx, c.Digest, at, chunkstore.ChunkLimit(c.Length), 0)
				} else {
					raw, err = store.ReadChunk(ctx, c.Digest, at, chunkstore.ChunkLimit(c.Length))
				}
				f := fetched{chunk: c, raw: raw, buf: buf, member: member, err: err}
				if err != nil {
					if ctx.Err() != nil {
						rawPool.put(buf)
						return
					}
					if !chunkstore.Proven(err) {
						rawPool.put(buf)
						dp.bad(c, err)
						continue
					}
					// Missing or damaged everywhere: a job tries the
					// .bad copies.
				} else {
					stats.FetchedBytes.Add(uint64(len(raw)))
				}
				select {
				case fetchedCh <- f:
				case <-done:
					rawPool.put(buf)
					return
				}
			}
		})
	}
	go func() { fetchWG.Wait(); close(fetchedCh) }()

	// Writers write verified chunks handed over by the jobs and return their
	// buffers.
	type verified struct {
		chunk *Chunk
		data  []byte
		buf   []byte // pool buffer backing data
	}
	verifiedCh := make(chan verified, opts.Writers)
	var writeWG sync.WaitGroup
	for range opts.Writers {
		writeWG.Go(func() {
			for v := range verifiedCh {
				if ctx.Err() == nil {
					writeChunk(plan, v.chunk, v.data, target, stats, dp.fail, opts.Journal, opts.HeldAt)
				}
				dataPool.put(v.buf)
			}
		})
	}

	// The journal: what is written is made durable and recorded
	// periodically, and once more when the work ends (also when it was
	// interrupted), so that a resume fetches none of it again.
	stopJournal := opts.Journal.flushEvery(target, dp.fail)

	var jobWG sync.WaitGroup
	for _, dec := range decoders {
		jobWG.Go(func() {
			for f := range fetchedCh {
				out := dataPool.get(done)
				if out == nil {
					rawPool.put(f.buf)
					continue
				}
				var data []byte
				err := f.err
				if err == nil {
					data, err = decodeChunk(dec, out, f, opts)
					if chain != nil {
						data, err = nextCopies(ctx, chain, dec, out, &f, data, err, opts, stats)
					}
				}
				if err != nil && ctx.Err() == nil && chunkstore.Proven(err) {
					data, err = salvage(ctx, store, dec, out, &f, err, opts, stats)
				}
				if err == nil && !opts.CRCOnly && !inBuffer(data, out) {
					if aligned(data) && inBuffer(data, f.buf) {
						// An uncompressed chunk, decoded where it was
						// read: its buffer goes on to be written, the
						// unused one takes its place.
						f.buf, out = out, f.buf
					} else {
						data = append(out[:0], data...)
					}
				}
				rawPool.put(f.buf)
				if err == nil && opts.Checked != nil {
					opts.Checked(f.chunk)
				}
				switch {
				case err != nil:
					if ctx.Err() == nil {
						dp.bad(f.chunk, err)
					}
				case opts.Writers > 0:
					verifiedCh <- verified{chunk: f.chunk, data: data, buf: out}
					continue
				case ctx.Err() == nil:
					writeChunk(plan, f.chunk, data, target, stats, dp.fail, opts.Journal, opts.HeldAt)
				}
				dataPool.put(out)
			}
		})
	}
	jobWG.Wait()
	close(verifiedCh)
	writeWG.Wait()
	stopJournal()

	errs.mu.Lock()
	defer errs.mu.Unlock()
	if errs.first != nil {
		return errs.first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if errs.count > 0 {
		slices.SortFunc(errs.damaged, func(a, b *ChunkError) int { return cmp.Compare(firstOffset(a), firstOffset(b)) })
		return &DamagedError{Archive: opts.Archive, Chunks: errs.damaged, Count: errs.count}
	}
	// Backstop: every byte of the image is either written data, a zero
	// range, or a damaged chunk written as zeros.
	if !opts.CRCOnly && !plan.dropped && opts.Skip == nil {
		if got := stats.DataBytes.Load() + stats.ZeroBytes.Load() + stats.DamagedBytes.Load(); got != plan.Size {
			return fmt.Errorf("%s: internal error: %d of %d bytes accounted for; nothing is claimed restored", opts.Archive, got, plan.Size)
		}
	}
	if err := target.Sync(); err != nil {
		return err
	}
	if len(errs.zeroed) > 0 {
		return &DamagedError{Archive: opts.Archive, Chunks: errs.zeroed, Count: len(errs.zeroed), Zeroed: true}
	}
	return nil
}

// runErrors is how a Run ends: the first error that stops it (and cancels
// the run), and the damaged chunks recorded (KeepGoing, or a journaled
// restore going on) or written as zeros (DamageZero).
type runErrors struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	first   error
	damaged []*ChunkError
	count   int // damaged chunks recorded (Options.Damaged takes them without damaged)
	zeroed  []*ChunkError
}

// stop fails the run with err (the first one wins).
func (r *runErrors) stop(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		r.first = err
		r.cancel()
	}
}

// damagePolicy is what Run does with a chunk it cannot restore and with a
// failed write: Options' KeepGoing, Damaged, OnMissing, OnCorrupt and
// Journal, applied to the run's plan, target and counts.
type damagePolicy struct {
	opts   *Options
	plan   *Plan
	store  chunkstore.Store
	target Target
	stats  *Stats
	errs   *runErrors
}

// fail records a damaged chunk (a *ChunkError, KeepGoing) or stops the
// run with err.
func (d *damagePolicy) fail(err error) {
	var ce *ChunkError
	if !d.opts.KeepGoing || !errors.As(err, &ce) {
		d.errs.stop(err)
		return
	}
	d.errs.mu.Lock()
	defer d.errs.mu.Unlock()
	if d.opts.Damaged != nil {
		d.opts.Damaged(ce)
	} else if d.opts.MaxListed <= 0 || len(d.errs.damaged) < d.opts.MaxListed {
		d.errs.damaged = append(d.errs.damaged, ce)
	}
	d.errs.count++
	d.stats.Failed.Add(1)
}

// chunkErr is the error of chunk c: its digest, offsets and location.
func (d *damagePolicy) chunkErr(c *Chunk, err error) *ChunkError {
	return &ChunkError{Digest: c.Digest, Length: c.Length, Offsets: d.plan.Offsets(c), Location: d.store.ChunkLocation(c.Digest), Err: err}
}

// bad handles a chunk no copy of which could be restored. Only an error
// that proves the chunk damaged (read, failed a check) or missing (the
// store said it is not there) is damage (chunkstore.Proven): the damage
// policy zeroes it, or it fails the run (or is recorded, KeepGoing). Any
// other error proves nothing about the chunk: it stops the run, never
// zeroed, never recorded as damage.
func (d *damagePolicy) bad(c *Chunk, err error) {
	ce := d.chunkErr(c, err)
	var policy Damage
	switch {
	case !chunkstore.Proven(err):
		d.errs.stop(ce)
		return
	case !ce.Missing():
		policy = d.opts.OnCorrupt
	default:
		policy = d.opts.OnMissing
	}
	if policy == DamageFail && d.opts.Journal != nil && !d.opts.KeepGoing {
		// Journaled: the other chunks are still fetched and made durable,
		// so that a resume (--on-missing/--on-corrupt zero, another store)
		// fetches only the damaged ones; past MaxDamagedGoingOn of them (a
		// wrong store, not damage) the run stops at once.
		d.errs.mu.Lock()
		goOn := d.errs.count < MaxDamagedGoingOn
		if goOn {
			d.errs.damaged = append(d.errs.damaged, ce)
			d.errs.count++
			d.stats.Failed.Add(1)
		}
		d.errs.mu.Unlock()
		if goOn {
			return
		}
	}
	if policy != DamageZero || d.opts.KeepGoing {
		d.fail(ce)
		return
	}
	for i := c.first; i >= 0; i = d.plan.next[i] {
		if err := d.target.Zero(int64(d.plan.offs[i]), int64(c.Length)); err != nil {
			d.fail(err)
			return
		}
		d.stats.DamagedBytes.Add(uint64(c.Length))
	}
	d.stats.Failed.Add(1)
	d.errs.mu.Lock()
	d.errs.zeroed = append(d.errs.zeroed, ce)
	d.errs.mu.Unlock()
}

// nextCopies handles the check of a copy read from a chain: one that
// passed (err == nil) is counted as served; one that failed is counted as
// damaged and the next member's copy is read into f.buf and checked, until
// one passes or no member is left. It returns the decoded data or an error
// naming every copy's failure.
func nextCopies(ctx context.Context, chain chunkstore.FallThrough, dec *chunkstore.Decoder, out []byte, f *fetched, data []byte, err error, opts Options, stats *Stats) ([]byte, error) {
	var errs []error
	for err != nil && ctx.Err() == nil {
		chain.Damaged(f.chunk.Digest, f.member, err)
		errs = append(errs, fmt.Errorf("%s: %w", chain.Members()[f.member], err))
		raw, m, rerr := chain.ReadChunkFrom(ctx, f.chunk.Digest, f.buf[rawAt(opts.Encrypted):rawAt(opts.Encrypted)], chunkstore.ChunkLimit(f.chunk.Length), f.member+1)
		if rerr != nil {
			if f.member+1 < len(chain.Members()) {
				errs = append(errs, rerr) // what the further members said
			}
			return nil, chunkstore.JoinErrors(errs...)
		}
		stats.FetchedBytes.Add(uint64(len(raw)))
		f.raw, f.member = raw, m
		data, err = decodeChunk(dec, out, *f, opts)
	}
	if err == nil {
		chain.Served(f.chunk.Digest, f.member, len(f.raw))
	}
	return data, err
}

// writeChunk writes a verified chunk to every offset it fills (but those
// held says the target holds it at already).
func writeChunk(plan *Plan, c *Chunk, data []byte, target Target, stats *Stats, fail func(error), j *Journal, held func(*Chunk, uint64) bool) {
	for i := c.first; i >= 0; i = plan.next[i] {
		if held != nil && held(c, plan.offs[i]) {
			continue
		}
		if err := target.WriteAt(data, int64(plan.offs[i])); err != nil {
			fail(err)
			return
		}
		stats.DataBytes.Add(uint64(len(data)))
	}
	stats.Fetched.Add(1)
	stats.DedupHits.Add(uint64(c.count - 1))
	if j != nil {
		j.Add(c.Digest)
	}
}

// rawAt is where in its pool buffer a fetcher reads an encoded chunk: the
// blob header (12 bytes plain, 44 encrypted: the manifest says which all
// chunks have) just before the next Alignment boundary, so that the
// payload of an uncompressed chunk, decoded in place, starts aligned and
// is written from where it was read (O_DIRECT needs aligned memory).
func rawAt(encrypted bool) int {
	if encrypted {
		return Alignment - chunkstore.EncryptedHeaderSize
	}
	return Alignment - chunkstore.PlainHeaderSize
}

// inBuffer reports whether data starts within buf's capacity (data is a
// slice of buf). Empty data is in no buffer.
func inBuffer(data, buf []byte) bool {
	if len(data) == 0 || cap(buf) == 0 {
		return false
	}
	p, b := uintptr(unsafe.Pointer(unsafe.SliceData(data))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= b && p < b+uintptr(cap(buf))
}

// aligned reports whether data starts on an Alignment boundary in memory.
func aligned(data []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(data)))%Alignment == 0
}

// decodeChunk decodes f.raw and verifies crypt mode, length and digest
// (chunkstore.Decoder.DecodeChunkInPlace: f.raw is consumed, and the
// plaintext of an uncompressed chunk is returned as a slice of f.raw, of
// a compressed one decoded into out); with CRCOnly it checks only the
// crypt mode and the CRC.
func decodeChunk(dec *chunkstore.Decoder, out []byte, f fetched, opts Options) ([]byte, error) {
	if opts.CRCOnly {
		if _, err := chunkstore.CheckCryptMode(f.raw, opts.Encrypted); err != nil {
			return nil, err
		}
		if err := chunkstore.CheckCRC(f.raw); err != nil {
			return nil, err
		}
		return out[:0], nil
	}
	return dec.DecodeChunkInPlace(out, f.raw, f.chunk.Digest, f.chunk.Length, opts.Encrypted, opts.Key)
}

// MiBps returns the throughput of n bytes over d in MiB/s (0 for d <= 0).
func MiBps(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / (1 << 20) / d.Seconds()
}
