package restore

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Record is what pbsdirect keeps of the last restore into a target, so that
// a later differential restore (--base auto) knows what the target holds
// and whether it can be trusted. For a regular file it is the extended
// attribute "user.pbsdirect.record" of the file (nothing is left beside
// it; on a file system without user extended attributes, a record file
// named by a hash of its path in the journal directory); for a block
// device, which has no extended attributes, it is the file
// "record-<hash of its path>" beside its resume journal (RecordPath). A
// restore sets it with Complete false once the target is opened, before
// anything is written, and with Complete true and the target's identity
// once the target is committed; a restore that fails, or writes zeros for
// damaged chunks, leaves it incomplete. A drill records as a restore does.
type Record struct {
	Snapshot  string `json:"snapshot"`   // TYPE/ID/TIME restored
	Archive   string `json:"archive"`    // e.g. drive-scsi0.img.fidx
	IndexCsum string `json:"index-csum"` // the index checksum from the manifest, hex
	Size      uint64 `json:"size"`       // image bytes
	// Complete says that the restore finished and the target held the
	// image whole, synced, when Target was taken.
	Complete bool `json:"complete"`
	// Failed, on an incomplete record, says why a drill found the
	// target not holding what it restored (its read-back, or the check
	// after it, failed): the restore completed but the target cannot be
	// trusted. Empty otherwise.
	Failed   string    `json:"failed,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Target is the target's identity when it finished (its Finished
	// is the record's): a file's device, inode, size, modification time
	// and change time (taken after the record was set and kept, for a
	// file with the extended attribute, in a record file among the
	// journal directories, the attribute's stamp), a block device's
	// number and size.
	Target Completion `json:"target"`
}

// RecordPath returns where the record of the target whose resume journal
// is at jpath lives: "-journal" becomes "-record" (a file's
// ".NAME.pbsdirect-record"), "journal-HASH" becomes "record-HASH".
func RecordPath(jpath string) string {
	dir, base := filepath.Split(jpath)
	if rest, ok := strings.CutPrefix(base, "journal-"); ok {
		return dir + "record-" + rest
	}
	return dir + strings.TrimSuffix(base, "journal") + "record"
}

// WriteRecord replaces the record at path by r (written and synced under a
// temporary name, then renamed; never through a symbolic link).
func WriteRecord(path string, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := replaceJournal(path, append(b, '\n'))
	if err != nil {
		return fmt.Errorf("target record %s: %w", path, err)
	}
	return f.Close()
}

// ReadRecord returns the record at path. A missing record returns an error
// wrapping os.ErrNotExist; a symbolic link or a file not this user's, one
// wrapping ErrJournalUnsafe; an unreadable one, an error naming path.
func ReadRecord(path string) (Record, error) {
	var r Record
	data, err := readJournalFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("target record %s: unreadable: %w", path, err)
	}
	return r, nil
}

// distrustRecord replaces the record of res's committed target (a
// RecordKeeper) by an incomplete one naming why (Record.Failed): a drill
// whose read-back or later check failed, so that no later --base trusts
// what the target holds. A failure is returned.
func distrustRecord(res *Result, why string) error {
	rk, ok := res.Target.(RecordKeeper)
	if !ok {
		return nil
	}
	return rk.KeepRecord(&Record{Snapshot: res.Snapshot.String(), Archive: res.Archive, IndexCsum: hex.EncodeToString(res.File.Csum[:]),
		Size: res.Plan.Size, Started: time.Now().UTC(), Failed: why})
}

// RemoveRecord removes the record at path; a missing one is no error.
func RemoveRecord(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("target record %s: %w", path, err)
	}
	return nil
}

// RecordKeeper is a Target that keeps the Record of the restore into it
// (filetarget.Target: an extended attribute of a regular file, a file in
// the journal directory for a block device).
type RecordKeeper interface {
	// KeepRecord replaces the target's record by r; for a complete
	// record the target's identity is taken now (r.Target is filled). A
	// nil r removes it.
	KeepRecord(r *Record) error
}

// RecordReader is a Sink that can read the Record of the last restore into
// its target, and say what the target is now, without opening it for
// writing.
type RecordReader interface {
	// TargetRecord returns the record; none returns an error wrapping
	// os.ErrNotExist.
	TargetRecord() (Record, error)
	// CurrentIdentity returns the identity of what is at the target's
	// place now, comparable with Record.Target (Completion.Same).
	CurrentIdentity() (Completion, error)
}

// TargetRecord returns the record of the last restore into sink's target;
// a sink that keeps none returns an error wrapping os.ErrNotExist.
func TargetRecord(sink Sink) (Record, error) {
	rr, ok := sink.(RecordReader)
	if !ok {
		return Record{}, fmt.Errorf("%s: no record is kept for this target: %w", sink, os.ErrNotExist)
	}
	return rr.TargetRecord()
}

// ReadBackOpener is a Sink whose existing target can be read back without
// opening it for writing (a dry run of a differential restore).
type ReadBackOpener interface {
	// OpenReadBack opens a reader of the target as it is now; a missing
	// target returns an error wrapping os.ErrNotExist.
	OpenReadBack() (BackReader, error)
}
