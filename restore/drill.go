package restore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pbsdirect/pbsdirect/snapshot"
)

// DrillOptions tune Drill.
type DrillOptions struct {
	// Restore tunes the restore; a drill's rule is not the restore
	// command's (KeepWork is false: a failed drill keeps its work only
	// when the cause lies outside the data or it was interrupted).
	Restore RestoreOptions
	// Jobs is the number of read-back readers (at least 1).
	Jobs int
	// Remove removes the target after a read-back that passed, when the
	// restore created it (Remover; never a block device or a file that
	// existed).
	Remove bool
	// RemoveOnFailure, with Remove, also removes a target the restore
	// created when the read-back or AfterReadBack failed (or was
	// interrupted): a fleet drill's throw-away copy, whose failure the
	// error and report carry. The error is then the drill's, joined with
	// the removal's.
	RemoveOnFailure bool
	// AfterReadBack, when set, is called with src and the target's path
	// after a read-back that passed, while the target is still open and
	// locked and before Remove (a boot check of the restored disk); its
	// error fails the drill and keeps the target.
	AfterReadBack func(ctx context.Context, src *snapshot.Reader, target string) error
	// MaxDamaged is how many damaged or missing chunks the error of a
	// drill of a damaged archive lists in full (0: MaxDamagedListed); it
	// counts them all.
	MaxDamaged int
	// Progress, when set, is called when the read-back starts, with the
	// image bytes and a function that returns those read (or skipped as
	// holes) so far; Drill calls the function it returns when the
	// read-back ends.
	Progress func(total int64, done func() int64) (stop func())
}

// MaxDamagedListed is how many damaged or missing chunks a drill's error
// lists by default (DrillOptions.MaxDamaged), as many as verify's report.
const MaxDamagedListed = 100

// DrillResult is what a Drill did.
type DrillResult struct {
	// Restore is the restore's result, nil when it failed; its Target is
	// closed when Drill returns.
	Restore *Result
	// Restored is when the restore ended (its target committed), for the
	// caller's time to restore.
	Restored time.Time
	// ReadBack counts the read-back's work and ReadBackTime is its wall
	// time; nil and 0 when the restore failed.
	ReadBack     *ReadBackStats
	ReadBackTime time.Duration
	// Removed reports whether the target was removed (DrillOptions.Remove).
	Removed bool
}

// Drill rehearses a disaster recovery of the index archive name of src:
// it restores it to the target sink opens (Restore), reads the committed
// target back while it is still open and locked, re-checking every chunk
// position against the index (ReadBackTarget), and with o.Remove removes
// a target the restore created once the read-back passed. The result says
// how far it went (never nil); the error is the restore's (refusals wrap
// ErrRefused), the read-back's (ErrReadBackMismatch for content that
// differs) or the removal's.
//
// Unless the restore writes damaged chunks as zeros (DamageZero), a
// damaged or missing chunk does not stop the restore: every chunk is
// read, and the error (a *DamagedError) lists the first o.MaxDamaged of
// the damaged ones, by offset, and counts them all, as verify would.
func Drill(ctx context.Context, src *snapshot.Reader, name string, sink Sink, o DrillOptions) (*DrillResult, error) {
	dr := &DrillResult{}
	if p := &o.Restore.Pipeline; p.OnMissing == DamageFail && p.OnCorrupt == DamageFail && p.Damaged == nil {
		p.KeepGoing, p.MaxListed = true, cmp.Or(o.MaxDamaged, MaxDamagedListed)
	}
	res, err := Restore(ctx, src, name, sink, o.Restore)
	if err != nil {
		return dr, err
	}
	dr.Restore, dr.Restored = res, time.Now()
	// The target stays open and locked until the read-back (and Remove)
	// are done: no other run can write it meanwhile.
	defer res.Target.Close(false)
	dr.ReadBack = &ReadBackStats{}
	stop := func() {}
	if o.Progress != nil {
		stop = o.Progress(int64(res.Plan.Size), func() int64 { return int64(dr.ReadBack.Bytes.Load() + dr.ReadBack.HoleBytes.Load()) })
	}
	err = ReadBackTarget(ctx, res.Target, sink.String(), res.Plan, res.Key, o.Jobs, dr.ReadBack)
	stop()
	dr.ReadBackTime = time.Since(dr.Restored)
	if err == nil && o.AfterReadBack != nil {
		err = o.AfterReadBack(ctx, src, sink.String())
	}
	if err != nil {
		// What the target holds is not what was restored: the next
		// --base must not trust it (it is refused, and --in-place or
		// --verify-base find what is there).
		why := "its read-back did not match the index"
		if !errors.Is(err, ErrReadBackMismatch) {
			why = "the drill failed after the restore"
		}
		if rerr := distrustRecord(res, why); rerr != nil {
			err = errors.Join(err, fmt.Errorf("the target's record could not be marked untrusted: %w", rerr))
		}
	}
	if rm, ok := res.Target.(Remover); ok && o.Remove && res.Created && (err == nil || o.RemoveOnFailure) {
		switch rerr := rm.Remove(); {
		case rerr == nil:
			dr.Removed = true
		case err == nil:
			err = rerr
		default:
			err = errors.Join(err, fmt.Errorf("the failed drill's target could not be removed: %w", rerr))
		}
	}
	return dr, err
}
