package restore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// MaxGuestDisks is the most disk images one RestoreGuest restores (a
// Proxmox VM has fewer drives).
const MaxGuestDisks = 64

// GuestDisk is one disk image of a guest restore: its archive (a .fidx
// name of the snapshot) and the sink of its target.
type GuestDisk struct {
	Archive string
	Sink    Sink
}

// GuestResult is what RestoreGuest did once its targets were opened: per
// disk, in the order given, the Result of a restored (or, with Resume,
// complete) disk and the error of one that failed (one of the two is
// nil); and the counts of the one run over all of them.
type GuestResult struct {
	Disks []*Result
	Errs  []error
	// Partial holds, for a disk that failed (or was interrupted) once the
	// run started, what it got so far: its Plan (the image's size), its
	// Stats (bytes written by this run) and Resumed; its Target is nil
	// (closed by the failure). Nil for the other disks.
	Partial []*Result
	// Stats counts the shared run: every unique chunk fetched and
	// decoded once, whichever disks and positions it fills.
	Stats *Stats
	// SharedChunks counts the distinct chunks (digests) that more than
	// one disk uses, each once however many disks use it, the zero chunk
	// (never fetched) left out: fetched once for all of them. It is the
	// plan's figure; Stats.Fetched counts what the run fetched.
	SharedChunks int
	// ResumedChunks counts the distinct chunks (digests) the disks held
	// already (what their stopped restores kept, a disk found complete)
	// that the run did not fetch, each once however many disks hold it:
	// comparable with Stats.Fetched. Each disk's Result.Resumed counts its
	// own.
	ResumedChunks int
	Options       Options // the pipeline options the run used
	Elapsed       time.Duration
}

// Err returns the disks' errors joined (errors.Join), nil when every
// disk was restored.
func (g *GuestResult) Err() error { return errors.Join(g.Errs...) }

// RestoreGuest restores several index archives of the snapshot src (a
// guest's disks), each to its own sink, as one restore: one plan over all
// images, in which a chunk used by several disks (or positions) is
// fetched, checked and decoded once and written wherever it is needed;
// one progress; one pipeline (memory bounded by the chunks in flight, as
// Run). Per disk it keeps Restore's rules: its resume journal (o.Resume
// continues each disk's stopped restore; a disk found complete is
// skipped, its Result's Complete set), its locks and checks (Sink.Open),
// the damage policy (o.Pipeline), what a stopped restore keeps.
//
// Every disk is planned and every target opened (checked and locked)
// before the first chunk of data is fetched; when one is refused or
// fails, those already opened are closed again as they were (a new file
// removed, nothing written to an existing one) and the error, naming the
// disk, is returned with a nil result: the refusals of every target that
// needs no chunk read for its checks (a file; a device's checks read its
// head, so devices are opened only when nothing else was refused, and a
// file written over (Force), which its opening resizes, last) joined
// (errors.Join), with o.Refused, before any chunk is read. Refusals wrap
// ErrRefused. Once the
// run started the result is returned, each disk's outcome in it, and its
// error is GuestResult.Err(). Disks of different crypt modes or keys
// cannot share a plan: such a guest is refused.
func RestoreGuest(ctx context.Context, src *snapshot.Reader, disks []GuestDisk, o RestoreOptions) (*GuestResult, error) {
	start := time.Now()
	note := o.Note
	if note == nil {
		note = func(string) {}
	}
	if len(disks) == 0 {
		return nil, errors.New("no disk to restore")
	}
	if len(disks) > MaxGuestDisks {
		return nil, fmt.Errorf("%d disks: at most %d are restored at once", len(disks), MaxGuestDisks)
	}
	o.guest = true
	// A note that the restore starts from the beginning is said only once
	// every target was accepted: a refused run starts nothing.
	var later []string
	planNote := func(msg string) {
		if strings.Contains(msg, "nothing to resume") {
			later = append(later, msg)
			return
		}
		note(msg)
	}
	ds := make([]*disk, len(disks))
	closeAll := func() {
		for _, d := range ds {
			if d == nil {
				continue
			}
			if d.target != nil {
				d.abandon()
			} else {
				d.rs.journal.Close()
			}
		}
	}
	var active []*disk
	for i, g := range disks {
		d, err := planDisk(ctx, src, g.Archive, g.Sink, o, planNote)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: %w", g.Archive, err)
		}
		ds[i] = d
		if d.res.Complete == "" {
			active = append(active, d)
		}
	}
	if o.Delta != nil {
		if o.Resume {
			closeAll()
			return nil, refusedf("a differential restore (--base, --in-place) does not resume: give one")
		}
		for _, d := range active {
			if err := d.prepareDelta(ctx, o.Delta); err != nil {
				closeAll()
				return nil, fmt.Errorf("%s: %w", d.name, err)
			}
		}
	}
	for _, d := range active[min(1, len(active)):] {
		if d.encrypted != active[0].encrypted || (d.encrypted && d.res.Key != active[0].res.Key) {
			closeAll()
			return nil, fmt.Errorf("%s and %s are not encrypted alike: restore them one at a time", active[0].name, d.name)
		}
	}
	// The head of a device's image, read for its checks, is kept for the
	// run: no chunk is fetched twice. Targets that need no chunk for their
	// checks (files) are opened first, so that one refused there refuses
	// the guest before any chunk is read.
	store := src.Store()
	var heads *headChunks
	if _, chain := store.(chunkstore.FallThrough); !chain {
		heads = &headChunks{Store: store, raw: map[crypto.Digest][]byte{}}
		store = heads.serving()
	}
	var headStore chunkstore.Store
	if heads != nil {
		headStore = withBadCopies(heads, src.Store())
	}
	order := slices.Clone(active)
	slices.SortStableFunc(order, func(a, b *disk) int { return cmp.Compare(openRank(a), openRank(b)) })
	// Every target whose opening changes nothing there and needs no chunk
	// is opened, so that all their refusals (and o.Refused, the caller's)
	// are said at once; a device only when nothing was refused, and one
	// that is written over (Force), which its opening changes, only when
	// every other target was opened.
	var refused []error
	if o.Refused != nil {
		refused = append(refused, o.Refused)
	}
	for _, d := range order {
		if len(refused) > 0 && openRank(d) > 0 {
			break // refused: nothing that reads a chunk or changes a target
		}
		d.headStore = headStore
		if err := d.open(ctx, src, o, note); err != nil {
			refused = append(refused, err)
		}
	}
	if len(refused) > 0 {
		closeAll()
		return nil, errors.Join(refused...)
	}
	for _, msg := range later {
		note(msg)
	}
	// Every target accepted: only now is a journal discarded or started.
	for _, d := range order {
		if err := d.startJournal(note); err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
	}
	g := &GuestResult{Disks: make([]*Result, len(ds)), Errs: make([]error, len(ds)), Partial: make([]*Result, len(ds)), Stats: &Stats{}}
	for i, d := range ds {
		if d.res.Complete != "" {
			d.res.Elapsed = time.Since(start)
			g.Disks[i] = d.res
		}
	}
	if len(active) == 0 {
		g.ResumedChunks = resumedChunks(ds, nil, nil)
		g.Elapsed = time.Since(start)
		return g, nil
	}

	// What each disk's stopped restore made durable, and its target still
	// holds, is neither fetched nor written again.
	held := make([]map[crypto.Digest]bool, len(active))
	for i, d := range active {
		rb, _ := d.target.(ReadBacker)
		if d.rs.durable == nil || rb == nil {
			continue
		}
		var key *crypto.Config
		if d.encrypted {
			key = d.res.Key
		}
		h, err := CheckDurable(ctx, rb, d.plan, d.rs.durable, key, DurableReaders, o.Pipeline.Held)
		if err != nil {
			closeAll()
			return nil, err
		}
		held[i] = h
		d.res.Resumed = len(h)
		if n := len(d.rs.durable) - len(h); n > 0 {
			note(fmt.Sprintf("note: %d chunk(s) the journal records are not on %s as written: they are fetched again", n, d.sink))
		}
	}
	// A differential restore writes only what each target does not hold.
	for _, d := range active {
		if d.delta == nil {
			continue
		}
		if err := d.planWork(ctx, o.Delta); err != nil {
			closeAll()
			return nil, err
		}
	}
	gp, err := newGuestPlan(active, held)
	if err != nil {
		closeAll()
		return nil, err
	}
	g.SharedChunks = gp.shared
	g.ResumedChunks = resumedChunks(ds, active, held)

	opts := o.Pipeline
	opts.Encrypted = active[0].encrypted
	opts.Key = active[0].res.Key
	opts.Archive = src.Snapshot().Dir()
	opts.Journal = gp.journal()
	stats := g.Stats
	stop := func() {}
	if o.Progress != nil {
		stop = o.Progress(int64(gp.plan.DataBytes()), func() int64 { return int64(stats.DataBytes.Load()) })
	}
	err = Run(ctx, store, gp.plan, gp.target, opts, stats)
	stop()
	g.Options = opts
	var damage *DamagedError
	if de := (*DamagedError)(nil); errors.As(err, &de) && de.Zeroed {
		// Every other byte is restored, verified and synced.
		damage, err = de, nil
	}
	for i, d := range active {
		derr := gp.errFor(i, err)
		if committer, ok := d.target.(Committer); ok && derr == nil {
			derr = committer.Commit()
		}
		at := slices.Index(ds, d)
		if derr != nil {
			g.Errs[at] = d.fail(ctx, o, derr)
			d.res.Stats, d.res.Options = gp.diskStats(i), opts
			d.res.Elapsed = time.Since(start)
			g.Partial[at] = d.res
			continue
		}
		var dd *DamagedError
		if damage != nil {
			dd, _ = gp.errFor(i, damage).(*DamagedError)
		}
		d.finish(o, dd, note)
		d.res.Stats, d.res.Options = gp.diskStats(i), opts
		d.res.Elapsed = time.Since(start)
		g.Disks[at] = d.res
	}
	g.Elapsed = time.Since(start)
	return g, nil
}

// resumedChunks counts the distinct chunks of the disks ds held already,
// each once: every chunk of a disk found complete, those held[i] holds
// of active[i]; a chunk another disk still needs fetched is not counted.
func resumedChunks(ds, active []*disk, held []map[crypto.Digest]bool) int {
	have := map[crypto.Digest]bool{}
	for _, d := range ds {
		if d.res.Complete != "" {
			for k := range d.plan.Chunks {
				have[d.plan.Chunks[k].Digest] = true
			}
		}
	}
	for i := range active {
		for c := range held[i] {
			have[c] = true
		}
	}
	for i, d := range active {
		for k := range d.plan.Chunks {
			if c := d.plan.Chunks[k].Digest; !held[i][c] {
				delete(have, c) // fetched for this disk
			}
		}
	}
	return len(have)
}

// guestPlan is the one plan of a guest restore: the disks' images laid
// end to end in one offset space (disk i from base[i]), each unique chunk
// once with its positions in every disk, written through target, which
// hands each write to the disk's own target.
type guestPlan struct {
	plan   *Plan
	disks  []*disk
	base   []uint64                 // where each disk starts in the plan's offsets
	uses   map[crypto.Digest]uint64 // per chunk: the disks (bits) it is written to
	shared int                      // distinct non-zero chunks more than one disk uses
	held   []map[crypto.Digest]bool
	target *guestTarget
}

// newGuestPlan lays the disks' plans end to end, leaving out per disk the
// chunks held (already on its target).
func newGuestPlan(disks []*disk, held []map[crypto.Digest]bool) (*guestPlan, error) {
	gp := &guestPlan{disks: disks, held: held, uses: map[crypto.Digest]uint64{}, target: &guestTarget{}}
	var size uint64
	for _, d := range disks {
		gp.base = append(gp.base, size)
		gp.target.parts = append(gp.target.parts, &guestPart{base: int64(size), size: int64(d.plan.Size), t: d.target, disk: len(gp.target.parts)})
		size += d.plan.Size
	}
	p := NewPlan(size, disks[0].plan.ChunkSize, nil)
	for i, d := range disks {
		dp := d.plan
		if d.delta != nil {
			dp = d.delta.work // what a differential restore writes
		}
		for k := range dp.Chunks {
			c := &dp.Chunks[k]
			if held[i][c.Digest] {
				p.dropped = true
				continue
			}
			gp.uses[c.Digest] |= 1 << i
			for at := c.first; at >= 0; at = dp.next[at] {
				if err := p.AddRange(gp.base[i]+dp.offs[at], uint64(c.Length), c.Digest); err != nil {
					return nil, fmt.Errorf("%s: %w", d.name, err)
				}
			}
		}
		for _, z := range dp.Zero {
			p.Zero = append(p.Zero, Range{Offset: gp.base[i] + z.Offset, Length: z.Length})
		}
		p.ZeroBytes += dp.ZeroBytes
		p.dropped = p.dropped || dp.dropped
	}
	p.Finish()
	gp.plan = p
	for d, u := range gp.uses {
		// The zero chunk is never fetched: it is not shared work.
		if bits.OnesCount64(u) > 1 && d != p.ZeroDigest {
			gp.shared++
		}
	}
	return gp, nil
}

// disk returns the index of the disk holding plan offset off.
func (gp *guestPlan) disk(off uint64) int {
	return sort.Search(len(gp.base), func(i int) bool { return gp.base[i] > off }) - 1
}

// journal returns the journal of the guest's run: a chunk written
// everywhere is added to the journal of each disk it fills, and a flush
// syncs each disk's target before its journal records its chunks. Nil
// when no disk keeps a journal.
func (gp *guestPlan) journal() *Journal {
	f := &journalFan{uses: gp.uses}
	some := false
	for _, d := range gp.disks {
		f.journals = append(f.journals, d.journal)
		f.targets = append(f.targets, d.target)
		some = some || d.journal != nil
	}
	if !some {
		return nil
	}
	return &Journal{fan: f}
}

// errFor returns the run's error err as disk i's: a damaged chunk's
// offsets made the disk's own, and only the chunks of the disk listed;
// another error as it is.
func (gp *guestPlan) errFor(i int, err error) error {
	if err == nil {
		return nil
	}
	d := gp.disks[i]
	var de *DamagedError
	if errors.As(err, &de) {
		mine := &DamagedError{Archive: d.req.Archive, Zeroed: de.Zeroed}
		for _, ce := range de.Chunks {
			if c := gp.chunkFor(i, ce); c != nil {
				mine.Chunks = append(mine.Chunks, c)
			}
		}
		mine.Count = len(mine.Chunks)
		if de.Count > len(de.Chunks) {
			mine.Count = de.Count // Options.Damaged took them: only counted
		}
		if mine.Count == 0 {
			if de.Zeroed {
				return nil
			}
			var others []string
			for j := range gp.disks {
				for _, ce := range de.Chunks {
					if j != i && gp.chunkFor(j, ce) != nil {
						others = append(others, gp.disks[j].name)
						break
					}
				}
			}
			return &GuestStopError{Disks: others, Cause: err}
		}
		return mine
	}
	var ce *ChunkError
	if errors.As(err, &ce) {
		if c := gp.chunkFor(i, ce); c != nil {
			return c
		}
		var others []string
		for j := range gp.disks {
			if j != i && gp.chunkFor(j, ce) != nil {
				others = append(others, gp.disks[j].name)
			}
		}
		return &GuestStopError{Disks: others, Cause: err}
	}
	var pe *partError
	if errors.As(err, &pe) && pe.disk != i {
		return &GuestStopError{Disks: []string{gp.disks[pe.disk].name}, Cause: err}
	}
	return err
}

// GuestStopError is the error of a guest's disk that stopped with the
// others when the run failed for another disk (Disks, their archives:
// one of their chunks, their target): nothing of its own failed, and what
// it made durable is kept for a resume. Cause is the run's error, whose
// offsets are the other disks'; it is unwrapped for its kind (exit code),
// never shown as this disk's.
type GuestStopError struct {
	Disks []string
	Cause error
}

// Error names the disks that stopped the run.
func (e *GuestStopError) Error() string {
	if len(e.Disks) == 0 {
		return "stopped with the other disks of the guest"
	}
	return "stopped with the other disks of the guest: " + strings.Join(e.Disks, ", ") + " failed"
}

// Unwrap returns the run's error.
func (e *GuestStopError) Unwrap() error { return e.Cause }

// partError is an error of the target of the guest's disk disk (its
// index in the plan).
type partError struct {
	disk int
	err  error
}

func (e *partError) Error() string { return e.err.Error() }
func (e *partError) Unwrap() error { return e.err }

// chunkFor returns ce with only the offsets in disk i, made the disk's
// own; nil when the chunk fills none of them.
func (gp *guestPlan) chunkFor(i int, ce *ChunkError) *ChunkError {
	c := *ce
	c.Offsets = nil
	for _, off := range ce.Offsets {
		if gp.disk(off) == i {
			c.Offsets = append(c.Offsets, off-gp.base[i])
		}
	}
	if len(c.Offsets) == 0 {
		return nil
	}
	return &c
}

// diskStats returns the counts of disk i: the bytes written to it, its
// zero ranges, and its chunks (fetched once for the guest, whatever
// other disks use them; FetchedBytes is the guest's only).
func (gp *guestPlan) diskStats(i int) *Stats {
	d, s := gp.disks[i], &Stats{}
	s.DataBytes.Store(uint64(gp.target.parts[i].written.Load()))
	s.ZeroBytes.Store(d.plan.ZeroBytes)
	var chunks, positions uint64
	for k := range d.plan.Chunks {
		if c := &d.plan.Chunks[k]; !gp.held[i][c.Digest] {
			chunks++
			positions += uint64(c.count)
		}
	}
	s.Fetched.Store(chunks)
	s.DedupHits.Store(positions - chunks)
	return s
}

// journalFan is the journal of a guest's run (Journal.fan): the journals
// and targets of its disks, and which disks each chunk fills.
type journalFan struct {
	journals []*Journal // nil for a disk without one
	targets  []Target
	uses     map[crypto.Digest]uint64
}

// add adds d to the journal of every disk it fills.
func (f *journalFan) add(d crypto.Digest) {
	for i, j := range f.journals {
		if j != nil && f.uses[d]&(1<<i) != 0 {
			j.Add(d)
		}
	}
}

// flush flushes every disk's journal to its target; the first error is
// returned, the other journals still flushed.
func (f *journalFan) flush() error {
	var first error
	for i, j := range f.journals {
		if j == nil {
			continue
		}
		if err := j.Flush(f.targets[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// guestTarget is the Target of a guest's run: the disks' targets end to
// end, each write and zero range handed to the one it falls in at its
// own offset.
type guestTarget struct{ parts []*guestPart }

type guestPart struct {
	base, size int64
	t          Target
	disk       int          // its index among the plan's disks
	written    atomic.Int64 // data bytes written
}

// wrap tags err (nil: nil) as the part's disk's.
func (p *guestPart) wrap(err error) error {
	if err == nil {
		return nil
	}
	return &partError{disk: p.disk, err: err}
}

// each calls fn for every part [off, off+length) covers, with the part's
// own offset and length.
func (g *guestTarget) each(off, length int64, fn func(p *guestPart, off, length int64) error) error {
	for _, p := range g.parts {
		lo, hi := max(off, p.base), min(off+length, p.base+p.size)
		if lo >= hi {
			continue
		}
		if err := fn(p, lo-p.base, hi-lo); err != nil {
			return err
		}
	}
	return nil
}

// WriteAt writes p to the disk holding off; a chunk never spans two.
func (g *guestTarget) WriteAt(p []byte, off int64) error {
	i := sort.Search(len(g.parts), func(i int) bool { return g.parts[i].base > off }) - 1
	if i < 0 || off+int64(len(p)) > g.parts[i].base+g.parts[i].size {
		return fmt.Errorf("internal error: write of %d bytes at %d spans no single disk", len(p), off)
	}
	part := g.parts[i]
	if err := part.t.WriteAt(p, off-part.base); err != nil {
		return part.wrap(err)
	}
	part.written.Add(int64(len(p)))
	return nil
}

// Zero zeroes the range on every disk it covers.
func (g *guestTarget) Zero(off, length int64) error {
	return g.each(off, length, func(p *guestPart, off, length int64) error { return p.wrap(p.t.Zero(off, length)) })
}

// Allocate reserves the range on every disk it covers whose target
// reserves storage (Allocator).
func (g *guestTarget) Allocate(off, length int64) error {
	return g.each(off, length, func(p *guestPart, off, length int64) error {
		if a, ok := p.t.(Allocator); ok {
			return p.wrap(a.Allocate(off, length))
		}
		return nil
	})
}

// Sync syncs every disk's target; the first error is returned.
func (g *guestTarget) Sync() error {
	var first error
	for _, p := range g.parts {
		if err := p.t.Sync(); err != nil && first == nil {
			first = p.wrap(err)
		}
	}
	return first
}

// Close does nothing: each disk's target is closed by its own steps.
func (g *guestTarget) Close(bool) error { return nil }

// openRank orders the opening of the guest's targets: 0 for one whose
// opening changes nothing already there (a new file, an existing one
// refused or continued), 1 for a device, whose checks read its image's
// head but change nothing, 2 for an existing file written over (Force),
// which its opening resizes: opened last, once every other target was
// accepted, so that no refusal leaves it changed.
func openRank(d *disk) int {
	if d.jr == nil {
		return 0
	}
	st := d.jr.State()
	switch {
	case st.Device:
		return 1
	case !st.Missing && d.jr.Overwrites():
		return 2
	}
	return 0
}

// headChunks is the store the heads of a guest's images are read through
// for their targets' checks: it keeps the encoded chunks read (a device's
// first chunks: a few), and serving returns the store the run reads
// through, which hands each kept chunk out once instead of fetching it
// again.
type headChunks struct {
	chunkstore.Store
	mu  sync.Mutex
	raw map[crypto.Digest][]byte
}

// ReadChunk reads the chunk and keeps a copy for the run.
func (h *headChunks) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	raw, err := h.Store.ReadChunk(ctx, d, buf, limit)
	if err == nil {
		h.mu.Lock()
		h.raw[d] = slices.Clone(raw)
		h.mu.Unlock()
	}
	return raw, err
}

// serving returns the store of the run: the kept chunks first, each
// once, then the store; the store's copies kept aside as damaged
// (chunkstore.BadCopies) stay readable through it.
func (h *headChunks) serving() chunkstore.Store {
	return withBadCopies(&keptChunks{Store: h.Store, h: h}, h.Store)
}

// withBadCopies returns s, which reads the chunks of inner, with inner's
// copies kept aside as damaged (chunkstore.BadCopies) readable through it
// when inner has them, so that a chunk every ordinary copy of which failed
// is still salvaged (chunkstore.Salvage) as a restore of one archive does.
func withBadCopies(s, inner chunkstore.Store) chunkstore.Store {
	if b, ok := inner.(chunkstore.BadCopies); ok {
		return &badCopiesOf{Store: s, BadCopies: b}
	}
	return s
}

// badCopiesOf is a Store whose chunks are read through Store and whose
// .bad copies are BadCopies'.
type badCopiesOf struct {
	chunkstore.Store
	chunkstore.BadCopies
}

type keptChunks struct {
	chunkstore.Store
	h *headChunks
}

// ReadChunk hands out the kept copy of d, once, appended to buf[:0];
// otherwise it reads the store.
func (k *keptChunks) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	k.h.mu.Lock()
	raw, ok := k.h.raw[d]
	delete(k.h.raw, d)
	k.h.mu.Unlock()
	if ok {
		return append(buf[:0], raw...), nil
	}
	return k.Store.ReadChunk(ctx, d, buf, limit)
}
