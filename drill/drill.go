// Package drill holds disaster-recovery drills: the report of one drill
// (a restore.Drill of one snapshot archive) and the fleet drill, which
// picks the newest disk images of every group in a verify.Scope (a
// namespace, the namespaces below it, one group) or reads a list of them,
// drills them into a scratch directory, several at a time, and reports
// them as one FleetReport. cmd parses the flags, opens the store and prints; restore.Drill
// does each drill's work.
//
// Layout: cmd → drill → restore (Drill, Summary), verify (Select),
// snapshot, index. A new kind of drill report goes here; a new step of
// one drill goes into restore.Drill.
package drill

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pbsdirect/pbsdirect/bootcheck"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

// Report is the JSON (or text) report of a disaster-recovery drill.
type Report struct {
	OK              bool             `json:"ok"`
	Error           string           `json:"error,omitempty"`
	Snapshot        string           `json:"snapshot,omitempty"`
	Archive         string           `json:"archive"`
	Target          string           `json:"target"`
	Started         string           `json:"started"`                           // RFC 3339, UTC
	RestoreSeconds  float64          `json:"time-to-restore-seconds,omitempty"` // store opened to synced target, less the time opening the key; absent when the restore failed
	ReadBackSeconds float64          `json:"read-back-seconds,omitempty"`       // re-check of every chunk from the target
	TotalSeconds    float64          `json:"total-seconds"`
	Restore         *restore.Summary `json:"restore,omitempty"`
	ReadBack        *ReadBackReport  `json:"read-back,omitempty"`
	Removed         bool             `json:"target-removed,omitempty"`
	// RateLimit is what the rate limits were (--rate, --burst,
	// --rate-requests) and what went through them, also for a drill that
	// failed or was interrupted; absent without limits, and in a fleet
	// drill's archives (the fleet report has it).
	RateLimit *ratelimit.Report `json:"rate-limit,omitempty"`
	// StoresLeftOut names the stores of a chain (several --store) that
	// could not be read, as a restore's summary does.
	StoresLeftOut []string `json:"stores-left-out,omitempty"`
	// Boot is the boot check of the restored disk (drill --boot).
	Boot *bootcheck.Report `json:"boot,omitempty"`
	// Salvaged lists the chunks missing or damaged in every store that
	// the restore recovered from a .bad copy (at most
	// restore.MaxSalvagedListed; SalvagedChunks counts them all), as in
	// Restore; Warning then says that PBS cannot restore the snapshot.
	Salvaged       []restore.SalvagedChunk `json:"recovered-from-bad-copies,omitempty"`
	SalvagedChunks int                     `json:"recovered-from-bad-copies-count,omitempty"`
	Warning        string                  `json:"warning,omitempty"`
	// Damaged lists the damaged or missing chunks of a drill that failed
	// for them (the first restore.MaxDamagedListed, by offset, as verify
	// reports them); DamagedCount counts them all.
	Damaged      []verify.DamagedChunk `json:"damaged-chunks,omitempty"`
	DamagedCount int                   `json:"damaged-count,omitempty"`
	ExitCode     int                   `json:"exit-code"` // the process exit code
	// NotRun marks an archive of a fleet drill that was interrupted
	// before its drill started: not drilled, neither passed nor failed.
	NotRun bool `json:"not-run,omitempty"`
}

// Interrupted reports whether the drill r was cut off by SIGINT or
// SIGTERM (its exit code 128+signal) or never started (NotRun): neither
// passed nor failed.
func (r *Report) Interrupted() bool { return r.NotRun || r.ExitCode > 128 }

// SalvageWarning returns the Warning of a drill that recovered n chunks
// (n > 0) from .bad copies: the drill passes, since pbsdirect can restore
// the snapshot, but PBS, which never reads a .bad copy, cannot until the
// store is repaired.
func SalvageWarning(n int) string {
	return fmt.Sprintf("%d chunk(s) intact only in a .bad copy: PBS itself cannot restore this snapshot until the store is repaired (`pbsdirect repair --store STORE`)", n)
}

// ReadBackReport says what the read-back checked.
type ReadBackReport struct {
	Bytes            uint64  `json:"bytes"`              // read from the target
	ChunksChecked    uint64  `json:"chunks-checked"`     // positions whose digest was recomputed
	ZeroBytesChecked uint64  `json:"zero-bytes-checked"` // zero ranges read and found zero
	HoleBytes        uint64  `json:"hole-bytes"`         // zero ranges that are holes of a sparse target
	MiBps            float64 `json:"mib-per-second"`
}

// NewReport starts the report of a drill of archive of snapshot ref (as
// given: TYPE/ID until it is resolved) to target, started at start.
func NewReport(ref, archive, target string, start time.Time) Report {
	return Report{Snapshot: ref, Archive: archive, Target: target, Started: start.UTC().Format(time.RFC3339)}
}

// Add records what the drill dr did: the restore's summary, with
// restoreTime as its time to restore, and the read-back's counts. It
// changes nothing when the restore failed.
func (r *Report) Add(dr *restore.DrillResult, restoreTime time.Duration) {
	if dr == nil || dr.Restore == nil {
		return
	}
	sum := dr.Restore.Summary(restoreTime)
	r.RestoreSeconds, r.Snapshot, r.Restore = sum.Seconds, sum.Snapshot, &sum
	if sum.SalvagedChunks > 0 {
		r.Salvaged, r.SalvagedChunks, r.Warning = sum.Salvaged, sum.SalvagedChunks, SalvageWarning(sum.SalvagedChunks)
	}
	rb := dr.ReadBack
	r.ReadBackSeconds, r.Removed = dr.ReadBackTime.Seconds(), dr.Removed
	r.ReadBack = &ReadBackReport{Bytes: rb.Bytes.Load(), ChunksChecked: rb.Chunks.Load(), ZeroBytesChecked: rb.ZeroChecked.Load(),
		HoleBytes: rb.HoleBytes.Load(), MiBps: restore.MiBps(rb.Bytes.Load(), dr.ReadBackTime)}
}

// Finish sets the outcome: OK unless err, its Error, the damaged chunks
// it lists (a *restore.DamagedError), and the total time since start.
func (r *Report) Finish(err error, start time.Time) {
	r.OK = err == nil
	if err != nil {
		r.Error = err.Error()
	}
	if de := (*restore.DamagedError)(nil); errors.As(err, &de) && !de.Zeroed {
		r.DamagedCount = max(de.Count, len(de.Chunks))
		r.Damaged = make([]verify.DamagedChunk, len(de.Chunks))
		for i, c := range de.Chunks {
			r.Damaged[i] = verify.DamagedChunkOf(c, 0)
		}
	}
	r.TotalSeconds = time.Since(start).Seconds()
}

// Item is one archive of a fleet drill: a snapshot (TYPE/ID/TIME, or
// TYPE/ID for the latest) and an archive name.
type Item struct {
	Ref, Archive string
}

// LineError is a line of a drill list that is not a SNAPSHOT ARCHIVE pair.
type LineError struct {
	Line int // 1-based
	Err  error
}

// Error says "line N: " and what is wrong.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns what is wrong.
func (e *LineError) Unwrap() error { return e.Err }

// ParseList reads "SNAPSHOT ARCHIVE" pairs from r, one a line, reading at
// most 16 MiB; blank lines and lines starting with # are skipped, archive
// names are normalized (index.NormalizeArchiveName) and each SNAPSHOT must
// pass checkRef. A line that does not is a *LineError; other errors are
// the reader's.
func ParseList(r io.Reader, checkRef func(ref string) error) ([]Item, error) {
	var out []Item
	sc := bufio.NewScanner(io.LimitReader(r, 16<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, &LineError{n, fmt.Errorf("want SNAPSHOT ARCHIVE, got %q", line)}
		}
		if err := checkRef(fields[0]); err != nil {
			return nil, &LineError{n, err}
		}
		out = append(out, Item{fields[0], index.NormalizeArchiveName(fields[1])})
	}
	return out, sc.Err()
}

// Latest lists the disk images (.img.fidx) of the newest snapshot of
// every group in scope (verify.Select with Latest set: sc's namespace and
// those sc.MaxDepth levels below it, or the one group or snapshot of
// sc.Ref), reading each manifest through snapshot's reader (on a chain,
// from the member with a good copy; no key is checked). A snapshot whose
// manifest cannot be read is listed with archive "?" (its drill reports
// the failure) and given to warn. Select's errors are returned as they
// are; a scope that exists and holds no snapshot is an error wrapping
// snapshot.ErrNoSnapshot with Select's note (a drill of nothing proves
// nothing).
func Latest(ctx context.Context, store chunkstore.Store, sc verify.Scope, warn func(index.Snapshot, error)) ([]Item, error) {
	sc.Latest = true
	sel, err := verify.Select(ctx, store, sc)
	if err != nil {
		return nil, err
	}
	if len(sel.Snapshots) == 0 {
		return nil, &EmptyScopeError{Note: sel.Note}
	}
	var out []Item
	for _, s := range sel.Snapshots {
		r, err := snapshot.OpenSnapshot(ctx, store, s, nil)
		if err != nil {
			out = append(out, Item{s.String(), "?"})
			warn(s, err)
			continue
		}
		for _, f := range r.Manifest().Files {
			if strings.HasSuffix(f.Filename, ".img.fidx") {
				out = append(out, Item{s.String(), f.Filename})
			}
		}
	}
	return out, nil
}

// EmptyScopeError is Latest's error for a scope that exists and holds no
// snapshot: nothing to drill, as verify.Select's Note says. It wraps
// snapshot.ErrNoSnapshot; a fleet drill of such a scope passes with the
// note, as verify does.
type EmptyScopeError struct{ Note string }

// Error returns "nothing to drill: " and the note.
func (e *EmptyScopeError) Error() string { return "nothing to drill: " + e.Note }

// Unwrap returns snapshot.ErrNoSnapshot.
func (e *EmptyScopeError) Unwrap() error { return snapshot.ErrNoSnapshot }

// Fleet drills items into the directory scratch, parallel at a time: for
// the i-th item it calls drill with the item and its copy's path there
// (a name made of i, the snapshot and the archive), and done with each
// report as it ends, one call at a time. Once ctx is done no further
// drill starts. It returns the reports in the order of items; an item
// not drilled has a Report with its snapshot and archive, and NotRun.
func Fleet(ctx context.Context, items []Item, scratch string, parallel int, drill func(it Item, target string) Report, done func(Report)) []Report {
	reps := make([]Report, len(items))
	for i, it := range items {
		reps[i] = Report{Snapshot: it.Ref, Archive: it.Archive, NotRun: true}
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(max(parallel, 1)) // Go waits while parallel drills run
	for i, it := range items {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil // done while waiting for a turn: not drilled
			}
			name := fmt.Sprintf("%03d-%s-%s", i, strings.NewReplacer("/", "_", ":", "").Replace(it.Ref), it.Archive)
			rep := drill(it, filepath.Join(scratch, strings.TrimSuffix(name, ".fidx")))
			mu.Lock()
			defer mu.Unlock()
			reps[i] = rep
			done(rep)
			return nil
		})
	}
	g.Wait()
	return reps
}

// FleetReport is the one JSON value of a fleet drill: its totals and
// every drill's report, in the order of the items.
type FleetReport struct {
	Totals
	// Note says why nothing was drilled although that is no failure (an
	// EmptyScopeError's note).
	Note   string   `json:"note,omitempty"`
	Drills []Report `json:"drills"`
}

// Totals sums up a fleet drill (the fields are in the order of their
// names).
type Totals struct {
	Archives int `json:"archives"`
	// Salvaged counts the archives that passed only with chunks
	// recovered from .bad copies (Report.Warning), SalvagedChunks those
	// chunks, summed.
	Salvaged int    `json:"archives-recovered-from-bad-copies,omitempty"`
	Bytes    uint64 `json:"bytes"` // image bytes restored
	Failed   int    `json:"failed"`
	// Interrupted counts the archives whose drill SIGINT or SIGTERM cut
	// off, NotRun those whose drill it kept from starting: neither passed
	// nor failed (Report.Interrupted).
	Interrupted    int     `json:"interrupted,omitempty"`
	NotRun         int     `json:"not-run,omitempty"`
	SalvagedChunks int     `json:"recovered-from-bad-copies-count,omitempty"`
	RestoreSeconds float64 `json:"restore-seconds"`   // the drills' times to restore, summed
	Slowest        string  `json:"slowest,omitempty"` // SNAPSHOT/ARCHIVE of the longest time to restore among the restores that completed
	// SlowestAt, FirstFailed and FirstSalvaged index the reports (-1:
	// none); Order lists them by time to restore, longest first.
	SlowestAt     int   `json:"-"`
	FirstFailed   int   `json:"-"`
	FirstSalvaged int   `json:"-"`
	Order         []int `json:"-"`
}

// Sum returns the totals of the reports reps.
func Sum(reps []Report) Totals {
	t := Totals{Archives: len(reps), SlowestAt: -1, FirstFailed: -1, FirstSalvaged: -1}
	for i, r := range reps {
		t.Order = append(t.Order, i)
		switch {
		case r.NotRun:
			t.NotRun++
		case r.Interrupted():
			t.Interrupted++
		}
		if !r.OK && !r.Interrupted() {
			t.Failed++
			if t.FirstFailed < 0 {
				t.FirstFailed = i
			}
		}
		t.RestoreSeconds += r.RestoreSeconds
		if r.SalvagedChunks > 0 {
			if t.FirstSalvaged < 0 {
				t.FirstSalvaged = i
			}
			t.Salvaged++
			t.SalvagedChunks += r.SalvagedChunks
		}
		if r.Restore == nil {
			continue // no restore completed: no time to restore to compare
		}
		t.Bytes += r.Restore.Size
		if t.SlowestAt < 0 || r.RestoreSeconds > reps[t.SlowestAt].RestoreSeconds {
			t.SlowestAt = i
		}
	}
	if t.SlowestAt >= 0 {
		t.Slowest = reps[t.SlowestAt].Snapshot + "/" + reps[t.SlowestAt].Archive
	}
	slices.SortStableFunc(t.Order, func(a, b int) int { return cmp.Compare(reps[b].RestoreSeconds, reps[a].RestoreSeconds) })
	return t
}
