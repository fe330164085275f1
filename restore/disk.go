package restore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// disk is one image restore's state through its steps, which Restore
// takes for one archive and RestoreGuest for each of a guest's: plan and
// resume state (planDisk), the target opened and journaled (open), and
// what a finished run leaves (finish).
type disk struct {
	name      string
	sink      Sink
	jr        Journaled // nil: the sink keeps no journal
	jpath     string    // the journal's place; "" for none
	hdr       JournalHeader
	plan      *Plan
	encrypted bool
	rs        resumeState
	req       SinkRequest
	target    Target
	journal   *Journal
	res       *Result
	// headStore, when set, is what the image's head is read from for the
	// target's checks (SinkRequest.Head) instead of src's store.
	headStore chunkstore.Store
	// discard says that the journal at jpath (an earlier restore's, with
	// nothing this run continues) is removed by startJournal, with
	// discardNote said then; nothing is removed before.
	discard     bool
	discardNote string
	// record says that the target's Record is kept (every restore and
	// drill); otherwise a run removes it. recordStarted is when it was
	// set incomplete.
	record        bool
	recordStarted time.Time
	// delta is a differential restore's state (RestoreOptions.Delta);
	// nil for a full restore.
	delta *diskDelta
}

// planDisk plans archive name of src for sink and, with o.Resume, finds
// what it continues (openResume); a target found complete sets
// d.res.Complete.
func planDisk(ctx context.Context, src *snapshot.Reader, name string, sink Sink, o RestoreOptions, note func(string)) (*disk, error) {
	snap := src.Snapshot()
	plan, fi, err := PlanOf(ctx, src, name)
	if err != nil {
		return nil, err
	}
	key := src.KeyFor(fi)
	d := &disk{name: name, sink: sink, plan: plan, encrypted: fi.CryptMode == index.CryptEncrypt}
	d.res = &Result{Plan: plan, File: fi, Key: key, Snapshot: snap, Archive: name, TargetName: sink.String(), store: src.Store()}
	d.hdr = JournalHeader{Snapshot: snap.String(), Archive: name, IndexCsum: hex.EncodeToString(fi.Csum[:]), Size: plan.Size}
	d.record = true
	d.jr, _ = sink.(Journaled)
	if d.jr != nil {
		d.jpath, err = d.jr.JournalPath()
		if errors.Is(err, ErrNoJournalPlace) {
			note(fmt.Sprintf("warning: %v: restoring without one (an interrupted restore cannot be resumed)", err))
			d.jpath, err = "", nil
		}
		if err != nil {
			return nil, err
		}
	}
	if o.Resume {
		if d.rs, err = openResume(ctx, d.jr, d.jpath, d.hdr, plan, key, o.KeepWork, o.guest, note); err != nil {
			return nil, err
		}
		if d.rs.complete != "" {
			d.res.Complete, d.res.Resumed = d.rs.complete, len(plan.Chunks)
		}
	}
	return d, nil
}

// open opens and locks the disk's target (an earlier stopped restore
// refused or started over once it is locked) and starts its journal. On
// an error nothing is left open.
func (d *disk) open(ctx context.Context, src *snapshot.Reader, o RestoreOptions, note func(string)) error {
	plan, key := d.plan, d.res.Key
	d.journal = d.rs.journal
	d.req = SinkRequest{Size: int64(plan.Size), DataBytes: int64(plan.DataBytes()), Reserve: plan.DataRanges(), Resume: d.rs.partial,
		CheckImage: !d.rs.continues, Plan: plan, Key: key, Archive: path.Join(src.Snapshot().Dir(), d.name), Note: note,
		Head: func(ctx context.Context, n int) ([]byte, error) {
			if d.delta != nil {
				// A differential restore's target may hold the head
				// already: no chunk is fetched for it then.
				if head, ok := d.headFromTarget(n); ok {
					return head, nil
				}
			}
			store := src.Store()
			if d.headStore != nil {
				store = d.headStore
			}
			return ImageHead(ctx, store, plan, n, d.encrypted, key)
		},
		Locked: func() error { return nil },
	}
	if d.journal == nil && d.jr != nil && d.jpath != "" {
		d.discard = true
		if !d.rs.stale {
			// Once the target is ours: an earlier stopped restore is
			// refused (Resume continues it) or started over (Restart),
			// its journal discarded by startJournal.
			d.req.Locked = func() (err error) {
				d.discardNote, err = startOverCheck(d.jr, d.jpath, o.Restart, !o.KeepWork)
				return err
			}
		}
	}
	target, err := d.sink.Open(ctx, d.req)
	if err != nil {
		d.journal.Close()
		return err
	}
	d.target = target
	return nil
}

// startJournal, once the disk's target is open (a guest's: once every
// target was), discards the journal of an earlier restore this run does
// not continue and starts the disk's own. Only then is a journal changed:
// a refused run leaves every journal as it was. An error discarding it is
// returned (the target is left open).
func (d *disk) startJournal(note func(string)) error {
	if d.discard {
		if d.discardNote != "" {
			note(d.discardNote)
		}
		if err := RemoveJournal(d.jpath); err != nil {
			return err
		}
		d.discard = false
	}
	// The target changes from here on: its record no longer vouches for
	// what it held.
	d.keepRecord(false, note)
	// A differential restore keeps no resume journal: one that stops
	// leaves the record incomplete, and what the target holds is found
	// again by reading it back (Delta.VerifyBase, Delta.InPlace).
	if d.journal == nil && d.jpath != "" && d.delta == nil {
		var err error
		if d.journal, err = CreateJournal(d.jpath, d.hdr); err != nil {
			note(fmt.Sprintf("warning: %v: restoring without a journal (an interrupted restore cannot be resumed)", err))
			d.journal = nil
		}
	}
	return nil
}

// abandon closes the opened target and its journal before any work was
// done: a target the restore created is removed, a journal it started
// removed, one it continues kept, and so is the partial output of the
// stopped restore it continues (a refused resume changes nothing).
func (d *disk) abandon() {
	if d.target == nil {
		return
	}
	if d.journal != d.rs.journal {
		d.journal.Remove()
	} else {
		d.journal.Close()
	}
	if c, ok := d.target.(Committer); ok && d.rs.partial {
		c.KeepPartial()
	}
	d.target.Close(true)
	d.target = nil
}

// fail closes the target after the run failed with err (failed) and
// returns what it left.
func (d *disk) fail(ctx context.Context, o RestoreOptions, err error) error {
	err = failed(ctx, d.sink.String(), d.target, d.journal, d.plan, d.req.Archive, o.KeepWork, err)
	if se := (*StoppedError)(nil); errors.As(err, &se) && se.Partial == "" && d.jr != nil && d.jr.Overwrites() {
		// Written over an existing target: its resume needs --force.
		se.Force = true
	}
	return err
}

// finish records a committed run: a Resume run under KeepWork leaves the
// journal's completion record (so that the next Resume knows), any other
// removes the journal; the target's capabilities fill the result.
func (d *disk) finish(o RestoreOptions, damage *DamagedError, note func(string)) {
	target := d.target
	if damage == nil && d.record {
		// Before the identity below: setting the record changes a
		// file's change time, which the journal's completion records.
		d.keepRecord(true, note)
	}
	var id Completion
	ierr := errors.New("no file")
	if idt, ok := target.(Identified); ok {
		id, ierr = idt.Identity()
	}
	if ierr == nil && damage == nil && o.KeepWork && o.Resume {
		id.Finished = time.Now().UTC()
		if cerr := d.journal.Complete(d.hdr, id); cerr != nil {
			note(fmt.Sprintf("warning: %v: a later --resume will not know the restore completed", cerr))
		}
	} else {
		d.journal.Remove()
	}
	res := d.res
	res.Target, res.Damage = target, damage
	if dw, ok := target.(DirectWriter); ok {
		res.Direct = dw.Direct()
	}
	if zr, ok := target.(ZeroReporter); ok {
		res.ZeroRanges = zr.ZeroHandling()
	}
	if rm, ok := target.(Remover); ok {
		res.Created = rm.Created()
	}
}
