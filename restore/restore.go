package restore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Sink opens the Target of a Restore once the image's plan is known. A
// sink whose target can be resumed after an interruption also implements
// Journaled.
type Sink interface {
	// String names the target in messages (a path).
	String() string
	// Open opens and locks the target for req.Size bytes; everything that
	// can be checked before the work is checked here, and a failure
	// leaves an existing target as it was.
	Open(ctx context.Context, req SinkRequest) (Target, error)
}

// SinkRequest is what Restore asks of Sink.Open.
type SinkRequest struct {
	Size      int64           // image bytes
	DataBytes int64           // bytes of data (not zero chunks), for a free-space check
	Reserve   iter.Seq[Range] // the image's data ranges (Plan.DataRanges)
	// Resume continues a new file's partial output left by an interrupted
	// restore (filetarget.Options.Resume).
	Resume bool
	// CheckImage asks the sink to check the target against the image once
	// it is locked (a block device's sector size against the image's
	// partition table, through Head): every restore but one that
	// continues an interrupted, journaled restore of the image (whose
	// signatures are its own) — one that starts from the beginning with
	// --resume, or reads back a device a completed restore left, included.
	CheckImage bool
	// Locked is called once the target is locked, before it changes; its
	// error stops Open.
	Locked func() error
	// Head returns the image's first n bytes, read from the store and
	// checked (ImageHead).
	Head    func(ctx context.Context, n int) ([]byte, error)
	Plan    *Plan          // the plan, for checks of the target against the image
	Key     *crypto.Config // the archive's key (nil unless encrypted)
	Archive string         // snapshot directory and archive name, for messages
	// Note receives warnings, as RestoreOptions.Note.
	Note func(msg string)
}

// Journaled is a Sink whose restores keep a resume journal. Restore asks
// it what is at its place (an existing target, a new target's partial
// output) to decide what --resume continues and whether an earlier restore
// is started over; the target's bytes are checked through ReadBacker.
type Journaled interface {
	Sink // String names the target as the user gave it
	// JournalPath returns where the target's resume journal is kept; an
	// error wrapping ErrNoJournalPlace when there is no place for one
	// (the restore then runs without).
	JournalPath() (string, error)
	// PartialPath names the partial output a new target is written as.
	PartialPath() string
	// Overwrites reports whether an existing target may be restored over
	// (filetarget.Options.Force).
	Overwrites() bool
	// State says what is at the target's place now; it changes nothing.
	State() TargetState
	// Same reports whether the target is the one the completion record c
	// describes (Identified.Identity), unchanged since.
	Same(c Completion) bool
	// CheckExisting reads the existing target back against plan (every
	// chunk position's digest, keyed with cc for an encrypted archive,
	// plain for cc == nil; zero ranges reading as zeros; jobs readers)
	// without changing it. Content that differs is FileCheck's, not an
	// error.
	CheckExisting(ctx context.Context, plan *Plan, cc *crypto.Config, jobs int) (FileCheck, error)
}

// TargetState is what a Journaled sink finds at its place (State).
type TargetState struct {
	// Exists says that something is at the target's name (a symbolic
	// link not followed), Regular that it is a regular file, Missing that
	// nothing is (neither Exists nor Missing: it cannot be told).
	Exists, Regular, Missing bool
	// Device says that the target is (or links to) a block device: it
	// holds what is written to it, without a partial output, and its
	// identity does not vouch for its content (a completed restore to it
	// is read back).
	Device bool
	// PartialSeen says that a new target's partial output is there
	// (PartialRegular: a regular file, of PartialSize bytes); PartialGone
	// that it is not; neither, that it cannot be told.
	PartialSeen, PartialGone, PartialRegular bool
	PartialSize                              int64
}

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// Pipeline tunes the pipeline (jobs, writers, fetchers, damage policy);
	// Restore sets its Encrypted, Key, Archive and Journal.
	Pipeline Options
	// Resume continues an interrupted restore to the same target (see
	// Restore); with nothing to resume the restore starts, said through
	// Note.
	Resume bool
	// Restart starts over an earlier stopped restore to the target whose
	// journal records durable chunks; without it (and without Resume)
	// such a restore is refused (ErrRefused), under KeepWork.
	Restart bool
	// KeepWork is the restore command's rule, not drill's: a stopped
	// restore keeps its partial output and journal whatever the cause, a
	// rerun over them is refused without Resume or Restart, a Resume run
	// that completes leaves a completion record, and a target found
	// complete by Resume ends the restore (Result.Complete). Without it a
	// failed restore keeps its work only when the cause lies outside the
	// data or the run was interrupted, and an earlier restore is always
	// started over.
	KeepWork bool
	// Progress, when set, is called when the chunks start to be written,
	// with the data bytes to write and a function that returns those
	// written so far; Restore calls the function it returns when the run
	// ends.
	Progress func(total int64, done func() int64) (stop func())
	// Refused, for RestoreGuest, is what its caller refused already (a
	// target of its own, such as a guest's configuration file): it is
	// joined with the disks' targets' refusals and the guest refused
	// before any chunk is read. Nil for none; Restore ignores it.
	Refused error
	// Note receives notes and warnings (what an earlier restore left,
	// chunks fetched again, a journal that cannot be kept), one line
	// starting "note: " or "warning: ", without "pbsdirect: " or a line
	// end; nil says nothing.
	Note func(msg string)
	// Delta, when set, makes the restore differential: only what the
	// target does not hold already is fetched and written (Delta). Not
	// with Resume.
	Delta *Delta
	// guest is set by RestoreGuest: refusals name its command line
	// (SNAPSHOT, no archive) for what continues a stopped restore.
	guest bool
}

// Result is what a finished Restore leaves: the target committed (durable,
// in place) and still open and locked for a read-back; the caller closes
// it. When Complete is set nothing was written and Target is nil.
type Result struct {
	Target Target
	// Snapshot and Archive are what was restored; TargetName names the
	// target as the sink does (Sink.String).
	Snapshot   index.Snapshot
	Archive    string
	TargetName string
	Plan       *Plan
	File       *index.FileInfo
	Key        *crypto.Config // the archive's key; nil unless it is encrypted
	Stats      *Stats
	Options    Options // the pipeline options the run used
	// Resumed counts the chunks an interrupted restore had made durable
	// and this one did not fetch again (every chunk when Complete).
	Resumed int
	// Damage lists the chunks written as zeros (DamageZero); nil for a
	// clean restore.
	Damage *DamagedError
	// Complete, set by a Resume (with KeepWork) that found the target
	// holding the image already, says so in one sentence; nothing was
	// written.
	Complete string
	// Created reports whether the restore created the target (a new file).
	Created bool
	// Direct reports whether the target was written with O_DIRECT.
	Direct bool
	// ZeroRanges says what was done with the zero ranges (ZeroReporter):
	// "holes", "punched", "zeroed", "skipped"; "" when the target does
	// not say.
	ZeroRanges string
	// Elapsed is Restore's wall time, from the plan to the committed
	// target.
	Elapsed time.Duration
	// Delta is what a differential restore found and left out; nil for
	// a full restore.
	Delta *DeltaResult
	store chunkstore.Store // read from (Summary's counts)
}

// ErrRefused is wrapped by Restore's errors for a restore refused as
// asked (the command line must change: --resume, --restart, --force).
var ErrRefused = errors.New("restore refused")

// refusedError is a refusal: its message is said as it is.
type refusedError struct{ msg string }

func (e *refusedError) Error() string        { return e.msg }
func (e *refusedError) Is(target error) bool { return target == ErrRefused }

// refusedf returns a refusal (ErrRefused) saying format with args.
func refusedf(format string, args ...any) error {
	return &refusedError{msg: fmt.Sprintf(format, args...)}
}

// Restore restores the index archive name of the snapshot src to the
// target sink opens. In order it:
//
//   - plans the archive (LoadPlan through src, so that the index comes
//     from the member holding the manifest);
//   - finds the resume journal's place (Journaled; none: a warning and no
//     journal) and, with Resume, what it continues (openResume: the
//     durable chunks of an interrupted restore, a completed one, an
//     existing file read back; nothing to resume: the restore starts);
//   - opens the target, and once it is locked checks it against the image
//     (SinkRequest.CheckImage) and starts over an earlier restore
//     (refused under KeepWork without Restart);
//   - runs the pipeline over src's store (RunResume beside the check of
//     what the journal records, for a target that can be read back);
//   - commits the target and, for a Resume under KeepWork, leaves the
//     journal's completion record.
//
// A restore that fails after chunks became durable keeps them with the
// journal (*StoppedError) under KeepWork, or when the cause lies outside
// the data or the run was interrupted; otherwise what the target holds is
// said (*PartialError for an existing target that was changed, "nothing
// was kept" for a new one). Refusals wrap ErrRefused.
func Restore(ctx context.Context, src *snapshot.Reader, name string, sink Sink, o RestoreOptions) (*Result, error) {
	start := time.Now()
	note := o.Note
	if note == nil {
		note = func(string) {}
	}
	d, err := planDisk(ctx, src, name, sink, o, note)
	if err != nil {
		return nil, err
	}
	plan, res := d.plan, d.res
	if res.Complete != "" {
		res.Elapsed = time.Since(start)
		return res, nil
	}
	if o.Delta != nil {
		if o.Resume {
			return nil, refusedf("a differential restore (--base, --in-place) does not resume: give one")
		}
		if err := d.prepareDelta(ctx, o.Delta); err != nil {
			return nil, err
		}
	}
	if err := d.open(ctx, src, o, note); err != nil {
		return nil, err
	}
	if err := d.startJournal(note); err != nil {
		d.abandon()
		return nil, err
	}
	target := d.target
	opts := o.Pipeline
	opts.Encrypted = d.encrypted
	opts.Key = res.Key
	opts.Archive = d.req.Archive
	opts.Journal = d.journal
	stats := &Stats{}
	total := plan.DataBytes()
	switch {
	case d.delta != nil && (o.Delta.VerifyBase || o.Delta.InPlace):
		// Read back while the rest is fetched (runChecked).
		res.Delta = d.delta.res
	case d.delta != nil:
		if err := d.planWork(ctx, o.Delta); err != nil {
			return nil, d.fail(ctx, o, err)
		}
		total = d.delta.work.writeBytes()
	}
	stop := func() {}
	if o.Progress != nil {
		// Progress counts data written: zero ranges take no time and
		// would only inflate the rate.
		done := func() int64 { return int64(stats.DataBytes.Load()) }
		if d.delta != nil && d.delta.work == nil {
			// Read back as it goes: a position is done once found
			// held (skipped) or written.
			done = func() int64 { return int64(stats.DataBytes.Load() + atomic.LoadUint64(&d.delta.res.SkippedBytes)) }
		}
		stop = o.Progress(int64(total), done)
	}
	resumed := 0
	rb, _ := target.(ReadBacker)
	if d.rs.durable != nil && rb != nil {
		// The journal says which chunks were written and synced; the
		// target's own bytes must say so too (a partial output changed
		// since, another device at the same path): they are read back
		// while the rest is fetched, and what they do not hold is fetched
		// after.
		resumed, err = RunResume(ctx, src.Store(), plan, target, rb, d.rs.durable, opts, stats)
		if n := len(d.rs.durable) - resumed; n > 0 && ctx.Err() == nil {
			note(fmt.Sprintf("note: %d chunk(s) the journal records are not on %s as written: they are fetched again", n, sink))
		}
	} else if d.delta != nil && d.delta.work == nil {
		err = d.runChecked(ctx, src.Store(), o.Delta, opts, stats)
	} else if d.delta != nil {
		err = Run(ctx, src.Store(), d.delta.work, target, opts, stats)
	} else {
		err = Run(ctx, src.Store(), plan, target, opts, stats)
	}
	stop()
	var damage *DamagedError
	if de := (*DamagedError)(nil); errors.As(err, &de) && de.Zeroed {
		// Every other byte is restored, verified and synced.
		damage, err = de, nil
	}
	committer, _ := target.(Committer)
	if err == nil && committer != nil {
		err = committer.Commit()
	}
	if err != nil {
		return nil, d.fail(ctx, o, err)
	}
	d.finish(o, damage, note)
	res.Stats, res.Options, res.Resumed = stats, opts, resumed
	res.Elapsed = time.Since(start)
	return res, nil
}

// failed closes target after the restore to it failed with err and says
// what it left. What the journal records as durable is kept for a resume
// (a *StoppedError) when keepWork is set, the cause lies outside the data
// or the run was interrupted, unless another program took the target's
// name meanwhile; otherwise the journal is removed and the error says
// what the target holds (Failed).
func failed(ctx context.Context, targetName string, target Target, journal *Journal, plan *Plan, archive string, keepWork bool, err error) error {
	committer, _ := target.(Committer)
	keep := keepWork || chunkstore.Outside(err) || ctx.Err() != nil
	if n := journal.Recorded(); n > 0 && keep && !errors.Is(err, ErrTargetExists) {
		// Keep what is durable: a resume fetches only the rest.
		partial := ""
		if committer != nil {
			partial = committer.PartialPath()
			committer.KeepPartial()
		}
		journal.Close()
		target.Close(true)
		return &StoppedError{Archive: archive, Target: targetName, Partial: partial, Journal: journal.Path(),
			Durable: n, Total: len(plan.Chunks), Err: err}
	}
	partial := committer != nil && committer.Partial()
	journal.Remove()
	target.Close(true)
	return Failed(archive, targetName, partial, err)
}

// Failed says what a failed restore of archive to targetName left: an
// existing target that was written to (partial) now holds a partial image
// (*PartialError); a new file was removed.
func Failed(archive, targetName string, partial bool, err error) error {
	if partial {
		return &PartialError{Archive: archive, Target: targetName, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		// Interrupted: the cause is the interruption, said once by the
		// caller, not a "context canceled" of this restore's.
		return &interruptedError{msg: fmt.Sprintf("restore of %s to %s interrupted before any chunk was made durable, nothing was kept", archive, targetName), err: err}
	}
	return fmt.Errorf("restore of %s to %s failed, nothing was kept: %w", archive, targetName, err)
}

// interruptedError is an interrupted restore's error: msg says what it
// left; err, the cancellation, is kept for its kind (exit code).
type interruptedError struct {
	msg string
	err error
}

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return e.err }

// StoppedError is a restore that stopped (any cause: damage, the store,
// the target, an interruption) with chunks durable on the target and
// recorded in its journal: both are kept, for a resume.
type StoppedError struct {
	Archive, Target string
	Partial         string // a new file's partial output; "" for an existing file or a device
	Journal         string // the journal's path
	Durable, Total  int    // chunks durable and kept, chunks of the run
	// Force says that the restore wrote over an existing target as
	// --force allowed: the resume it names is given --force too.
	Force bool
	Err   error
}

// Error says what was kept, where, and how to continue.
func (e *StoppedError) Error() string {
	kept := e.Target + " now holds a partial image, not a usable disk"
	if e.Partial != "" {
		kept = "partial output " + e.Partial
	}
	resume := "--resume"
	if e.Force {
		resume = "--resume --force"
	}
	if errors.Is(e.Err, context.Canceled) {
		// Interrupted: nothing to fix, and the cause ("interrupted") is
		// said by whoever interrupted it.
		return fmt.Sprintf("restore of %s to %s stopped: %d of %d chunks are durable and kept (%s, journal %s); run the same restore with %s to continue it, fetching only the rest",
			e.Archive, e.Target, e.Durable, e.Total, kept, e.Journal, resume)
	}
	if gs := (*GuestStopError)(nil); errors.As(e.Err, &gs) {
		// Another disk of the guest stopped it: its error says the cause.
		return fmt.Sprintf("restore of %s to %s stopped: %d of %d chunks are durable and kept (%s, journal %s); %v; run the same restore with %s, once that is fixed, to continue it, fetching only the rest",
			e.Archive, e.Target, e.Durable, e.Total, kept, e.Journal, gs, resume)
	}
	how := "once the cause is fixed (the store reachable again, credentials refreshed, space freed)"
	var de *DamagedError
	var ce *ChunkError
	if !chunkstore.Outside(e.Err) && (errors.As(e.Err, &de) || errors.As(e.Err, &ce)) {
		how = "with another --store that holds the missing or damaged chunks, or with --on-missing zero / --on-corrupt zero to write zeros for them"
	}
	return fmt.Sprintf("restore of %s to %s stopped: %d of %d chunks are durable and kept (%s, journal %s); run the same restore with %s to fetch only the rest, %s: %v",
		e.Archive, e.Target, e.Durable, e.Total, kept, e.Journal, resume, how, e.Err)
}

// Unwrap returns the cause.
func (e *StoppedError) Unwrap() error { return e.Err }

// PartialError is a restore that failed (or was interrupted) after it
// changed an existing target: the target now holds a partial image.
type PartialError struct {
	Archive, Target string
	Err             error
}

// Words says what the target holds now.
func (e *PartialError) Words() string {
	return fmt.Sprintf("%s now holds a partial image, not a usable disk (restore again to repair it)", e.Target)
}

// Error says that the restore failed after writing started, what the
// target holds now, and why.
func (e *PartialError) Error() string {
	return fmt.Sprintf("restore of %s to %s failed after writing started: %s: %v", e.Archive, e.Target, e.Words(), e.Err)
}

// Unwrap returns the cause.
func (e *PartialError) Unwrap() error { return e.Err }
