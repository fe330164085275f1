package restore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"os"
	"path"

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
	Resume    bool            // continue an interrupted restore's partial output
	Locked    func() error    // called once the target is locked, before it changes
	Plan      *Plan           // the plan, for checks of the target against the image
	Key       *crypto.Config  // the archive's key (nil unless encrypted)
	Archive   string          // snapshot directory and archive name, for messages
}

// Journaled is a Sink whose restores keep a resume journal: the path of
// the journal and of the partial output a new target is written as.
type Journaled interface {
	// JournalPath returns where the target's resume journal is kept.
	JournalPath() (string, error)
	// PartialPath returns the partial output a new target is written as
	// ("" when the target is written in place).
	PartialPath() string
}

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// Pipeline tunes the pipeline (jobs, writers, fetchers, damage policy);
	// Restore sets its Encrypted, Key, Archive and Journal.
	Pipeline Options
	// Resume continues an interrupted restore to the same target: the
	// chunks its journal records, and the target still holds, are not
	// fetched again. Without it an earlier interrupted restore is started
	// over (said through Note).
	Resume bool
	// CheckTarget, when set, is called once the target is locked, before
	// anything in it changes (a device's sector size against the image);
	// its error stops the restore.
	CheckTarget func(ctx context.Context, plan *Plan, key *crypto.Config) error
	// Progress, when set, is called when the chunks start to be written,
	// with the data bytes to write and a function that returns those
	// written so far; Restore calls the function it returns when the run
	// ends.
	Progress func(total int64, done func() int64) (stop func())
	// Note receives notes (what an earlier restore left, chunks fetched
	// again), one line without "pbsdirect: " or a line end; nil says
	// nothing.
	Note func(msg string)
}

// Result is what a finished Restore leaves: the target committed (durable,
// in place) and still open and locked for a read-back; the caller closes
// it.
type Result struct {
	Target  Target
	Plan    *Plan
	File    *index.FileInfo
	Key     *crypto.Config // the archive's key; nil unless it is encrypted
	Stats   *Stats
	Options Options // the pipeline options the run used
	// Resumed counts the chunks an interrupted restore had made durable
	// and this one did not fetch again.
	Resumed int
	// Damage lists the chunks written as zeros (DamageZero); nil for a
	// clean restore.
	Damage *DamagedError
}

// ErrNothingToResume is wrapped by Restore's error for RestoreOptions.Resume
// without an interrupted restore to the target.
var ErrNothingToResume = errors.New("nothing to resume")

// Restore restores the index archive name of the snapshot src to the
// target sink opens: it plans the archive (LoadPlan through src, so that
// the index comes from the member holding the manifest), opens or resumes
// the journal, opens the target, checks on it what the journal records as
// durable, runs the pipeline over src's store, and commits the target.
// On failure what is durable is kept for a resume when the cause lies
// outside the data or the run was interrupted (an error saying so);
// otherwise the journal is removed and the error says what the target
// holds now (*PartialError for an existing target that was changed).
// Errors for the resume journal wrap ErrNothingToResume or
// ErrJournalMismatch.
func Restore(ctx context.Context, src *snapshot.Reader, name string, sink Sink, o RestoreOptions) (_ *Result, err error) {
	snap, m := src.Snapshot(), src.Manifest()
	plan, fi, err := LoadPlan(ctx, src, snap.Dir(), m, name, src.Key())
	if err != nil {
		return nil, src.Removed(ctx, err)
	}
	key := src.KeyFor(fi)
	targetName := sink.String()
	hdr := JournalHeader{Snapshot: snap.String(), Archive: name, IndexCsum: hex.EncodeToString(fi.Csum[:]), Size: plan.Size}
	jr, journaled := sink.(Journaled)
	var journal *Journal
	var durable map[crypto.Digest]bool
	if o.Resume {
		if !journaled {
			return nil, fmt.Errorf("--resume: %w: %s keeps no journal", ErrNothingToResume, targetName)
		}
		jpath, err := jr.JournalPath()
		if err != nil {
			return nil, err
		}
		j, err := ResumeJournal(jpath, hdr)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("--resume: no interrupted restore to %s to continue (no journal %s): run without --resume: %w", targetName, jpath, ErrNothingToResume)
		case errors.Is(err, ErrJournalMismatch):
			return nil, fmt.Errorf("--resume refused for %s: %w", targetName, err)
		case err != nil:
			return nil, err
		}
		journal, durable = j, j.Done()
	}
	req := SinkRequest{Size: int64(plan.Size), DataBytes: int64(plan.DataBytes()), Reserve: plan.DataRanges(), Resume: o.Resume,
		Plan: plan, Key: key, Archive: path.Join(snap.Dir(), name)}
	req.Locked = func() error {
		if !o.Resume && o.CheckTarget != nil {
			if err := o.CheckTarget(ctx, plan, key); err != nil {
				return err
			}
		}
		if !o.Resume && journaled {
			return startOver(jr, targetName, o.Note)
		}
		return nil
	}
	target, err := sink.Open(ctx, req)
	if err != nil {
		if journal != nil {
			journal.Close()
		}
		return nil, err
	}
	committer, _ := target.(Committer)
	if journal == nil && journaled {
		jpath, _ := jr.JournalPath()
		journal, err = CreateJournal(jpath, hdr)
		if err != nil {
			target.Close(true)
			return nil, err
		}
	}
	resumed := 0
	if durable != nil {
		// The journal says which chunks were written and synced; the
		// target's own bytes must say so too (a partial output changed
		// since, another device at the same path): what they do not hold
		// is fetched again.
		held := map[crypto.Digest]bool{}
		if fb, ok := target.(FileBacked); ok {
			held, err = CheckDurable(ctx, fb.File(), plan, durable, key, o.Pipeline.Jobs, nil)
			if err != nil {
				journal.Close()
				if committer != nil {
					committer.KeepPartial()
				}
				target.Close(true)
				return nil, err
			}
		}
		resumed = plan.Drop(func(c *Chunk) bool { return held[c.Digest] })
		if n := len(durable) - resumed; n > 0 && o.Note != nil {
			o.Note(fmt.Sprintf("note: %d chunk(s) the journal records are not on %s as written: they are fetched again", n, targetName))
		}
	}
	opts := o.Pipeline
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = key
	opts.Archive = req.Archive
	opts.Journal = journal
	stats := &Stats{}
	stop := func() {}
	if o.Progress != nil {
		// Progress counts data written: zero ranges take no time and
		// would only inflate the rate.
		stop = o.Progress(int64(plan.DataBytes()), func() int64 { return int64(stats.DataBytes.Load()) })
	}
	err = Run(ctx, src.Store(), plan, target, opts, stats)
	stop()
	var damage *DamagedError
	if de := (*DamagedError)(nil); errors.As(err, &de) && de.Zeroed {
		// Every other byte is restored, verified and synced.
		damage, err = de, nil
	}
	if err == nil && committer != nil {
		err = committer.Commit()
	}
	if err != nil {
		partial := committer != nil && committer.Partial()
		if journal != nil {
			if n := journal.Recorded(); n > 0 && (chunkstore.Outside(err) || ctx.Err() != nil) {
				// Keep what is durable for a resume.
				if committer != nil {
					committer.KeepPartial()
				}
				journal.Close()
				target.Close(true)
				return nil, fmt.Errorf("restore of %s to %s stopped: %d of %d chunks are durable and kept (journal %s); run the same restore with --resume to continue: %w",
					opts.Archive, targetName, n, resumed+len(plan.Chunks), journal.Path(), err)
			}
			journal.Remove()
		}
		target.Close(true)
		return nil, restoreFailed(opts.Archive, targetName, partial, err)
	}
	if journal != nil {
		journal.Remove()
	}
	return &Result{Target: target, Plan: plan, File: fi, Key: key, Stats: stats, Options: opts, Resumed: resumed, Damage: damage}, nil
}

// startOver says what an earlier interrupted restore to the target left,
// if anything, and discards its journal: the restore starts over. It runs
// with the target locked, before anything in it changes.
func startOver(jr Journaled, targetName string, note func(string)) error {
	jpath, err := jr.JournalPath()
	if err != nil {
		return err
	}
	h, done, jerr := ReadJournal(jpath)
	// This run's own partial output is there already, empty: only one
	// with content is an earlier restore's.
	perr := os.ErrNotExist
	if p := jr.PartialPath(); p != "" {
		pst, err := os.Lstat(p)
		if err == nil && pst.Size() > 0 {
			perr = nil
		}
	}
	if note != nil {
		switch {
		case jerr == nil:
			note(fmt.Sprintf("note: an interrupted restore of %s %s to %s left %d durable chunks; starting over, they are discarded (give --resume to continue it instead)",
				h.Snapshot, h.Archive, targetName, len(done)))
		case perr == nil:
			note(fmt.Sprintf("note: an earlier restore to %s left a partial output with nothing journaled to resume: starting over, it is discarded", targetName))
		}
	}
	return RemoveJournal(jpath)
}

// restoreFailed says what a failed restore left: an existing target that
// was written to now holds a partial image; a new file was removed.
func restoreFailed(archive, targetName string, partial bool, err error) error {
	if partial {
		return &PartialError{Archive: archive, Target: targetName, Err: err}
	}
	return fmt.Errorf("restore of %s to %s failed, nothing was kept: %w", archive, targetName, err)
}

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

// FileSink opens a regular file or block device at Path (OpenTarget) with
// Options; the SinkRequest's size, data bytes, reserve, resume and lock
// hook replace the corresponding options.
type FileSink struct {
	Path    string
	Options TargetOptions
}

// String returns the path.
func (s *FileSink) String() string { return s.Path }

// Open opens the target (OpenTarget).
func (s *FileSink) Open(ctx context.Context, req SinkRequest) (Target, error) {
	o := s.Options
	o.DataBytes, o.Reserve, o.Resume, o.Locked = req.DataBytes, req.Reserve, req.Resume, req.Locked
	return OpenTarget(s.Path, req.Size, o)
}

// JournalPath returns JournalPath of the target's path.
func (s *FileSink) JournalPath() (string, error) { return JournalPath(s.Path) }

// PartialPath returns PartialPath of the target's path.
func (s *FileSink) PartialPath() string { return PartialPath(s.Path) }

var _ Journaled = (*FileSink)(nil)
