package restore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// diskDelta is a differential restore's state for one disk: the base's
// plan (nil in place), what was found (res) and the plan of what is
// written (work, once the target is open).
type diskDelta struct {
	base *Plan
	res  *DeltaResult
	work *Plan
	// held and heldKnown: the size of what the target held before it was
	// opened (heldSize).
	held      uint64
	heldKnown bool
}

// heldSize returns the size of what is at sink's target now, before a
// restore opens it (RecordReader.CurrentIdentity; 0 when nothing is
// there); known is false when the sink cannot say.
func heldSize(sink Sink) (size uint64, known bool) {
	rr, ok := sink.(RecordReader)
	if !ok {
		return 0, false
	}
	id, err := rr.CurrentIdentity()
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, true
	case err != nil || id.Size < 0:
		return 0, false
	}
	return uint64(id.Size), true
}

// prepareDelta, before the disk's target is opened (a refusal changes
// nothing), plans the base snapshot's same archive and, unless the base is
// to be verified, checks that the target's Record vouches for it
// (trustBase). Refusals wrap ErrRefused.
func (d *disk) prepareDelta(ctx context.Context, dl *Delta) error {
	d.delta = &diskDelta{res: &DeltaResult{Mode: dl.Mode()}}
	if dl.InPlace || dl.VerifyBase {
		d.delta.held, d.delta.heldKnown = heldSize(d.sink)
	}
	if dl.InPlace {
		return nil
	}
	if dl.Base == nil {
		return errors.New("a differential restore needs a base snapshot (or in place)")
	}
	base, fi, err := PlanOf(ctx, dl.Base, d.name)
	if errors.Is(err, index.ErrNotInManifest) {
		return d.refuseBaseWithout(dl.Base.Snapshot().String())
	}
	if err != nil {
		return fmt.Errorf("base snapshot %s: %w", dl.Base.Snapshot(), err)
	}
	d.delta.base = base
	d.delta.res.Base = dl.Base.Snapshot().String()
	if dl.VerifyBase {
		return nil
	}
	return d.trustBase(JournalHeader{Snapshot: dl.Base.Snapshot().String(), Archive: d.name, IndexCsum: hex.EncodeToString(fi.Csum[:]), Size: base.Size})
}

// refuseBaseWithout returns the refusal (ErrRefused) of a base snapshot
// that has no archive of the disk's name: the target cannot hold it. The
// refusal names what the target's record says it holds, when it says.
func (d *disk) refuseBaseWithout(base string) error {
	why := fmt.Sprintf("the base snapshot has no archive %s", index.DisplayText(d.name))
	if rec, err := TargetRecord(d.sink); err == nil {
		why = fmt.Sprintf("its record says it holds %s %s, and %s", index.DisplayText(rec.Snapshot), index.DisplayText(rec.Archive), why)
	}
	return refusedf("--base %s refused for %s: %s; give --base with a snapshot of the archive it holds, or --in-place to read it and write what differs",
		base, d.sink, why)
}

// trustBase checks that the record of the disk's target says it holds
// base whole: a completed restore of that snapshot, archive and index,
// and the target (its identity and size) unchanged since. Otherwise the
// differential restore is refused (ErrRefused), naming why and
// --verify-base.
func (d *disk) trustBase(base JournalHeader) error {
	rec, err := TargetRecord(d.sink)
	// The record is text anyone with the target's rights could have
	// written: said only made safe.
	rs, ra := index.DisplayText(rec.Snapshot), index.DisplayText(rec.Archive)
	why := ""
	switch {
	case errors.Is(err, os.ErrNotExist):
		why = "no record of a restore into it (pbsdirect records each restore and drill into a target; another program wrote it, or it was copied)"
	case err != nil:
		why = err.Error()
	case !rec.Complete && rec.Failed != "":
		why = fmt.Sprintf("a drill of %s %s into it found it does not hold what was restored (%s)", rs, ra, index.DisplayText(rec.Failed))
	case !rec.Complete:
		why = fmt.Sprintf("the restore of %s %s into it started at %s did not complete", rs, ra, rec.Started.Format(time.RFC3339))
	case rec.Snapshot != base.Snapshot || rec.Archive != base.Archive:
		why = fmt.Sprintf("its record says it holds %s %s", rs, ra)
	case rec.IndexCsum != base.IndexCsum || rec.Size != base.Size:
		why = fmt.Sprintf("its record is of another index of %s %s (index %.12s…, %d bytes; the store's is %.12s…, %d bytes)",
			rs, ra, index.DisplayText(rec.IndexCsum), rec.Size, base.IndexCsum, base.Size)
	default:
		rr := d.sink.(RecordReader)
		id, err := rr.CurrentIdentity()
		if err != nil || !id.Same(rec.Target) {
			why = fmt.Sprintf("it changed since the restore of %s into it finished at %s (or another file or device is there now)", rs, rec.Finished.Format(time.RFC3339))
		}
	}
	if why == "" {
		return nil
	}
	return refusedf("--base %s refused for %s: %s; give --verify-base to read the target back and skip only what matches the base, or restore without --base",
		base.Snapshot, d.sink, why)
}

// planWork computes, once the disk's target is open, the plan of what the
// differential restore writes (planDelta): a verified base or an in-place
// restore reads the target back (uncached) for it.
func (d *disk) planWork(ctx context.Context, dl *Delta) error {
	var cc *crypto.Config
	if d.encrypted {
		cc = d.res.Key
	}
	in := deltaInput{plan: d.plan, base: d.delta.base, cc: cc, readers: dl.Readers, res: d.delta.res, held: d.delta.held, heldKnown: d.delta.heldKnown}
	if dl.VerifyBase || dl.InPlace {
		rb, ok := d.target.(ReadBacker)
		if !ok {
			return fmt.Errorf("%s: the target cannot be read back: restore without --verify-base or --in-place", d.sink)
		}
		r, err := rb.ReadBack(true)
		if err != nil {
			return fmt.Errorf("%s: read back: %w", d.sink, err)
		}
		defer r.Close()
		in.r = r
	}
	work, err := planDelta(ctx, in)
	if err != nil {
		return fmt.Errorf("%s: %w", d.sink, err)
	}
	d.delta.work = work
	d.res.Delta = d.delta.res
	return nil
}

// writeBytes returns the bytes p's chunks are written as, every position
// counted: the data a run of p writes.
func (p *Plan) writeBytes() uint64 {
	var n uint64
	for i := range p.Chunks {
		n += uint64(p.Chunks[i].Length) * uint64(p.Chunks[i].count)
	}
	return n
}

// keepRecord sets the record of the disk's target (RecordKeeper): started
// and incomplete (complete false) before anything is written, complete
// once committed; a run that keeps no record (d.record false) removes it.
// A failure is said through note as a warning.
func (d *disk) keepRecord(complete bool, note func(string)) {
	rk, ok := d.target.(RecordKeeper)
	if !ok {
		return
	}
	var r *Record
	if d.record {
		if d.recordStarted.IsZero() {
			d.recordStarted = time.Now().UTC()
		}
		r = &Record{Snapshot: d.hdr.Snapshot, Archive: d.hdr.Archive, IndexCsum: d.hdr.IndexCsum, Size: d.hdr.Size, Started: d.recordStarted, Complete: complete}
		if complete {
			r.Finished = time.Now().UTC()
		}
	}
	if err := rk.KeepRecord(r); err != nil {
		note(fmt.Sprintf("warning: %v: a later --base auto will not know what %s holds", err, d.sink))
	}
}

// headFromTarget returns the image's first n bytes (fewer for a smaller
// image) from the target of a differential restore when it holds them
// already: every chunk position covering them reads back (uncached, from a
// reader of its own: the target is being opened) with the index's digest,
// keyed for an encrypted archive, and zero ranges count as zeros. Then the
// checks of the target against the image (SinkRequest.Head) fetch no chunk.
// ok is false when the target cannot be read or does not hold them.
func (d *disk) headFromTarget(n int) (head []byte, ok bool) {
	ro, can := d.sink.(ReadBackOpener)
	if !can || d.plan.dropped {
		return nil, false
	}
	r, err := ro.OpenReadBack()
	if err != nil {
		return nil, false
	}
	defer r.Close()
	var cc *crypto.Config
	if d.encrypted {
		cc = d.res.Key
	}
	ents := d.plan.entries()
	pool, err := newBufPool(1, alignUp(max(d.plan.maxChunk(), 1)), true)
	if err != nil {
		return nil, false
	}
	defer pool.close()
	buf := pool.get(nil)
	want := min(uint64(n), d.plan.Size)
	out := make([]byte, 0, want)
	for at := uint64(0); at < want; {
		i := sort.Search(len(ents), func(i int) bool { return ents[i].off+uint64(ents[i].length) > at })
		if i == len(ents) || ents[i].off > at {
			end := d.plan.Size
			if i < len(ents) {
				end = ents[i].off
			}
			end = min(end, want)
			out = append(out, make([]byte, end-at)...) // a zero range
			at = end
			continue
		}
		e := ents[i]
		data := buf[:e.length]
		if _, err := r.ReadAt(data, int64(e.off)); err != nil {
			return nil, false
		}
		if cc.ChunkDigest(data) != d.plan.Chunks[e.chunk].Digest {
			return nil, false
		}
		out = append(out, data[at-e.off:min(uint64(e.length), want-e.off)]...)
		at = min(e.off+uint64(e.length), want)
	}
	return out, true
}
