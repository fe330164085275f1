package restore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// resumeState is what a resume found to continue.
type resumeState struct {
	journal *Journal               // the journal to append to; nil: a new one is created
	durable map[crypto.Digest]bool // chunks to check on the target and not fetch again
	partial bool                   // a new file's partial output is continued (filetarget.Options.Resume)
	// continues says that an interrupted restore of this image to the
	// target is continued: what it wrote (a partition table, signatures)
	// is its own, so the target is not checked against the image again.
	continues bool
	// complete, when set, says that the target holds the image already:
	// nothing to do.
	complete string
	// stale says that the journal there records nothing to continue: it
	// is discarded once the target is opened (a guest's: once every
	// target was accepted), never by a run refused.
	stale bool
}

// openResume finds what a resume continues: the journal at jpath of the
// interrupted restore to jr (refusing one of another snapshot, archive or
// index) and the chunks it records as durable, which Restore checks on
// the target while the rest is fetched (RunResume). With nothing to
// resume (no journal, no partial output, no place for a journal, a sink
// that keeps none) the restore starts from the beginning, said through
// note.
//
// A journal of an interrupted restore of something else (a newer snapshot
// of TYPE/ID) is refused while it left durable chunks (resumeOther); one
// of an interrupted restore over an existing file is refused without
// Force, which that restore was given (resumeNeedsForce).
//
// A journal that records a completed restore is checked against the
// target: a file still the one it left (device, inode, size, modification
// and change time) is complete (with allowComplete: the restore command, not drill);
// for a block device every data chunk is read back and only what does not
// match is fetched again. An existing file that no record says is this
// restore's (a run without resume leaves none, or the file changed since)
// is read back against the image (keyed with key for an encrypted
// archive): whole, it is complete; otherwise the resume is refused
// without Force (resumeOverFile); guest says that the refusals name
// restore-guest's command line (resumeOther). So is a block device no journal records
// a restore to (without Force, with allowComplete): whole, it is complete;
// otherwise the restore starts (resumeOverDevice).
func openResume(ctx context.Context, jr Journaled, jpath string, hdr JournalHeader, plan *Plan, key *crypto.Config, allowComplete, guest bool, note func(string)) (resumeState, error) {
	fresh := func(why string) (resumeState, error) {
		note(fmt.Sprintf("note: --resume: nothing to resume (%s): the restore starts from the beginning", why))
		return resumeState{stale: jpath != ""}, nil
	}
	if jr == nil {
		return fresh("the target keeps no journal")
	}
	if jpath == "" {
		return fresh("no place for a journal")
	}
	targetPath := jr.String()
	st := jr.State()
	// An existing file no record vouches for: only its bytes can say.
	overFile := st.Regular && !jr.Overwrites()
	h, complete, err := ReadCompletion(jpath)
	switch {
	case errors.Is(err, os.ErrNotExist) && overFile && allowComplete:
		// Restored by a run without --resume (which leaves no record),
		// or another file.
		return resumeOverFile(ctx, jr, "no journal records its restore", hdr, plan, key, note)
	case errors.Is(err, os.ErrNotExist) && st.Device && !jr.Overwrites() && allowComplete:
		// A block device restored by a run without --resume, or by one
		// whose journal is gone: its bytes say whether it is complete.
		return resumeOverDevice(ctx, jr, jpath, hdr, plan, key, note)
	case errors.Is(err, os.ErrNotExist) && overFile:
		return resumeState{}, refusedf("--resume: %s exists and no journal (%s) records its restore: a run without --resume leaves no record, so it may be complete; give --force to restore over it", targetPath, jpath)
	case errors.Is(err, os.ErrNotExist):
		return fresh("no journal " + jpath)
	case err != nil:
		return resumeState{}, err
	}
	if h != hdr && complete != nil {
		if overFile && allowComplete {
			return resumeOverFile(ctx, jr, fmt.Sprintf("its journal records a completed restore of %s %s, not of this one", h.Snapshot, h.Archive),
				hdr, plan, key, note)
		}
		return fresh(fmt.Sprintf("the journal records a completed restore of %s %s, not of this one", h.Snapshot, h.Archive))
	}
	device := st.Device
	if complete == nil && h != hdr {
		// An interrupted restore of something else: its durable chunks
		// are not thrown away because a newer snapshot appeared.
		why, err := resumeOther(jr, jpath, h, hdr, st, guest)
		if err != nil {
			return resumeState{}, err
		}
		return fresh(why)
	}
	if complete == nil && overFile {
		// An interrupted restore over this existing file, which only
		// --force (given then) writes to.
		return resumeState{}, resumeNeedsForce(targetPath, jpath, h)
	}
	if complete != nil {
		if !device {
			if allowComplete && jr.Same(*complete) {
				return resumeState{complete: fmt.Sprintf("%s is complete: the restore of %s/%s to it finished at %s and the file is unchanged since; nothing to do",
					targetPath, hdr.Snapshot, hdr.Archive, complete.Finished.Format(time.RFC3339))}, nil
			}
			if overFile && allowComplete {
				return resumeOverFile(ctx, jr, fmt.Sprintf("it changed since the restore to it completed at %s", complete.Finished.Format(time.RFC3339)),
					hdr, plan, key, note)
			}
			return fresh(fmt.Sprintf("the restore to %s completed at %s, but the file there is not the one it left", targetPath, complete.Finished.Format(time.RFC3339)))
		}
		j, err := ResumeJournal(jpath, hdr)
		if err != nil {
			return resumeState{}, err
		}
		all := make(map[crypto.Digest]bool, len(plan.Chunks))
		for i := range plan.Chunks {
			all[plan.Chunks[i].Digest] = true
		}
		note(fmt.Sprintf("note: --resume: the restore of %s %s to %s completed at %s: reading its data back, fetching only what no longer matches",
			hdr.Snapshot, hdr.Archive, targetPath, complete.Finished.Format(time.RFC3339)))
		return resumeState{journal: j, durable: all}, nil
	}
	if partial := jr.PartialPath(); !device && st.Missing {
		switch {
		case st.PartialGone:
			return fresh("no partial output " + partial)
		case st.PartialSeen && st.PartialRegular && st.PartialSize != int64(plan.Size):
			// Stopped before the partial output had the image's size:
			// nothing in it was journaled either.
			return fresh("the partial output " + partial + " is not of the image's size")
		}
	}
	j, err := ResumeJournal(jpath, hdr)
	switch {
	case errors.Is(err, ErrJournalMismatch):
		// resumeOther refuses it first; this is a journal changed
		// meanwhile.
		return resumeState{}, refusedf("--resume refused for %s: %v", targetPath, err)
	case err != nil:
		return resumeState{}, err
	}
	return resumeState{journal: j, durable: j.Done(), partial: !device && !st.Exists, continues: true}, nil
}

// resumeOverDevice answers a resume to the block device of jr that no
// journal at jpath records a restore to: the device is read back against
// plan as resumeOverFile reads a file. Holding the image whole, it is
// complete: nothing is written. Otherwise there is nothing to resume and
// the restore starts from the beginning (said through note), under the
// rules of any restore to a device (a signature there is refused without
// --force). An error reading it is returned.
func resumeOverDevice(ctx context.Context, jr Journaled, jpath string, hdr JournalHeader, plan *Plan, key *crypto.Config, note func(string)) (resumeState, error) {
	chk, err := readBackExisting(ctx, jr, "no journal "+jpath+" records a restore to it", hdr, plan, key, note)
	if err != nil {
		return resumeState{}, err
	}
	if chk.Whole(plan) {
		return resumeState{complete: fmt.Sprintf("%s is complete: it holds %s %s whole, checked %d chunks; nothing to do",
			jr.String(), hdr.Snapshot, hdr.Archive, chk.Chunks)}, nil
	}
	why := "it is smaller than the image"
	if chk.Size == int64(plan.Size) {
		why = fmt.Sprintf("%d of %d chunks differ from the index", chk.Differ, chk.Chunks)
		if chk.NotZero > 0 {
			why += ", zero ranges do not read as zeros"
		}
	}
	note(fmt.Sprintf("note: --resume: nothing to resume (no journal %s, and %s does not hold the image: %s): the restore starts from the beginning", jpath, jr.String(), why))
	return resumeState{}, nil
}

// readBackExisting reads the existing target of jr back against plan
// (Journaled.CheckExisting, DurableReaders readers), saying first through
// note why (what was found) and what.
func readBackExisting(ctx context.Context, jr Journaled, why string, hdr JournalHeader, plan *Plan, key *crypto.Config, note func(string)) (FileCheck, error) {
	targetPath := jr.String()
	note(fmt.Sprintf("note: --resume: %s exists and %s: reading it back to check it against %s %s (%d chunks)",
		targetPath, why, hdr.Snapshot, hdr.Archive, len(plan.Chunks)+int(plan.DedupHits())))
	chk, err := jr.CheckExisting(ctx, plan, key, DurableReaders)
	if err != nil {
		return chk, fmt.Errorf("--resume: read back %s: %w", targetPath, err)
	}
	return chk, nil
}

// resumeOverFile answers a resume over the target of jr, an existing
// regular file that no completion record vouches for (why says what was found):
// every chunk position of plan is read back from it and checked against
// the index (keyed with key for an encrypted archive), and every zero
// range must read as zeros (Journaled.CheckExisting, DurableReaders
// readers). A file
// that holds the image whole is complete: nothing is written. Otherwise
// the resume is refused (ErrRefused) naming how many chunks differ and
// --force: a file is never written to without the user asking to
// overwrite it. An error reading it is returned.
func resumeOverFile(ctx context.Context, jr Journaled, why string, hdr JournalHeader, plan *Plan, key *crypto.Config, note func(string)) (resumeState, error) {
	targetPath := jr.String()
	chk, err := readBackExisting(ctx, jr, why, hdr, plan, key, note)
	if err != nil {
		return resumeState{}, err
	}
	if chk.Whole(plan) {
		return resumeState{complete: fmt.Sprintf("%s holds %s %s whole, checked %d chunks: nothing to do",
			targetPath, hdr.Snapshot, hdr.Archive, chk.Chunks)}, nil
	}
	const how = "give --force to restore over it (or another TARGET)"
	if chk.Size != int64(plan.Size) {
		return resumeState{}, refusedf("--resume: %s exists and does not hold %s %s: it is %d bytes, the image %d; %s",
			targetPath, hdr.Snapshot, hdr.Archive, chk.Size, plan.Size, how)
	}
	var what []string
	if chk.Differ > 0 {
		what = append(what, fmt.Sprintf("%d of %d chunks differ from the index", chk.Differ, chk.Chunks))
	}
	if chk.NotZero > 0 {
		what = append(what, "zero ranges do not read as zeros")
	}
	return resumeState{}, refusedf("--resume: %s exists and does not hold %s %s whole: %s (%v); %s",
		targetPath, hdr.Snapshot, hdr.Archive, strings.Join(what, ", "), chk.Mismatch, how)
}

// startOverCheck runs, with the target locked and before anything in it
// changes, when a restore starts without resume; it changes nothing. An
// earlier interrupted restore whose journal at jpath records durable
// chunks on what is there (a new file's partial output, a device, an
// existing file written over with --force) is refused (ErrRefused, naming
// --resume and --restart) unless restart (--restart given) or scratch (a
// run that keeps no work, a drill) is set; then, or when there is nothing
// worth resuming, its journal (or the record of a completed restore) is to
// be discarded (disk.startJournal), and it returns what to say then
// through note (naming --restart when it was given, else --resume as the
// way to continue it instead), "" for nothing.
func startOverCheck(jr Journaled, jpath string, restart, scratch bool) (string, error) {
	targetPath := jr.String()
	h, done, jerr := ReadJournal(jpath)
	_, complete, _ := ReadCompletion(jpath)
	st := jr.State()
	// This run's own partial output is there already, empty: only one
	// with content is an earlier restore's; a device, and an existing
	// file written over in place (--force), hold what was written to
	// them.
	device := st.Device
	partialLeft := st.PartialSeen && st.PartialSize != 0
	left := device || st.Regular || partialLeft
	switch {
	case jerr == nil && complete == nil && len(done) > 0 && left && !restart && !scratch:
		return "", refusedf("%s: an earlier restore of %s %s stopped and left %d durable chunks (journal %s): give --resume to continue it (fetching only the rest), or --restart to start over and discard them",
			targetPath, h.Snapshot, h.Archive, len(done), jpath)
	case jerr == nil && complete == nil && len(done) > 0 && left && !restart:
		return fmt.Sprintf("note: an interrupted restore of %s %s to %s left %d durable chunks; starting over, they are discarded (give --resume to continue it instead)",
			h.Snapshot, h.Archive, targetPath, len(done)), nil
	case jerr == nil && complete == nil && len(done) > 0 && left:
		return fmt.Sprintf("note: --restart: the %d durable chunks an interrupted restore of %s %s to %s left are discarded",
			len(done), h.Snapshot, h.Archive, targetPath), nil
	case partialLeft && !device:
		return fmt.Sprintf("note: an earlier restore to %s left a partial output with nothing journaled to resume: starting over, it is discarded", targetPath), nil
	}
	return "", nil
}

// resumeOther answers a resume for hdr to the target of jr whose journal
// at jpath records an interrupted restore of h, another snapshot, archive
// or index (a newer snapshot of TYPE/ID, say). When it left durable
// chunks on the target (or its partial output) the resume is refused
// (ErrRefused), naming the snapshot that continues it and --restart, which
// starts over with hdr's. When nothing of it is left (no durable chunk, a
// new file's partial output gone) it returns why there is nothing to
// resume. An error reading the journal is returned. The refusal names
// what continues the stopped restore as restore's arguments (SNAPSHOT
// ARCHIVE), or with guest as restore-guest's (SNAPSHOT).
func resumeOther(jr Journaled, jpath string, h, hdr JournalHeader, st TargetState, guest bool) (string, error) {
	_, done, err := ReadJournal(jpath)
	switch {
	case err != nil:
		return "", err
	case len(done) == 0:
		return fmt.Sprintf("the stopped restore of %s %s recorded no durable chunk", h.Snapshot, h.Archive), nil
	case !st.Device && st.Missing && st.PartialGone:
		return fmt.Sprintf("the partial output %s of the stopped restore of %s %s is gone", jr.PartialPath(), h.Snapshot, h.Archive), nil
	}
	how := fmt.Sprintf("--resume %s %s continues it; --restart (without --resume) discards it and restores %s %s", h.Snapshot, h.Archive, hdr.Snapshot, hdr.Archive)
	if guest {
		how = fmt.Sprintf("restore-guest --resume %s continues it; --restart (without --resume) discards it and restores %s", h.Snapshot, hdr.Snapshot)
	}
	return "", refusedf("--resume refused for %s: the stopped restore to it was of %s %s (index %.12s…, %d bytes; journal %s, %d durable chunks), not of %s %s (index %.12s…, %d bytes): %s",
		jr.String(), h.Snapshot, h.Archive, h.IndexCsum, h.Size, jpath, len(done), hdr.Snapshot, hdr.Archive, hdr.IndexCsum, hdr.Size, how)
}

// resumeNeedsForce is the refusal of a resume without --force over an
// existing file whose journal at jpath records an interrupted restore (of
// h) over it: that restore was given --force, and so is its resume.
func resumeNeedsForce(targetPath, jpath string, h JournalHeader) error {
	return refusedf("--resume: %s exists and a restore of %s %s over it with --force stopped (journal %s): give --resume --force to continue it (fetching only the rest), or --restart --force to start over",
		targetPath, h.Snapshot, h.Archive, jpath)
}
