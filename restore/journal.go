package restore

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// JournalHeader names what a resume journal belongs to: a resume against
// anything else is refused.
type JournalHeader struct {
	Snapshot  string `json:"snapshot"`   // TYPE/ID/TIME
	Archive   string `json:"archive"`    // e.g. drive-scsi0.img.fidx
	IndexCsum string `json:"index-csum"` // the index checksum from the manifest, hex
	Size      uint64 `json:"size"`       // image bytes
}

// ErrJournalMismatch is wrapped by OpenJournal's error when a resume names
// another snapshot, archive, index or size than the journal.
var ErrJournalMismatch = errors.New("the interrupted restore was of something else")

// Journal records the chunks of a restore that are durable on its target,
// so that an interrupted restore can resume without fetching them again.
// Its file is one JSON line (JournalHeader), then one line per chunk with
// its digest in hex, appended only after the target was synced with the
// chunk written to every offset (Flush). A torn last line (a crash while
// appending) is ignored. Safe for concurrent use.
type Journal struct {
	path    string
	f       *os.File
	mu      sync.Mutex
	pending []crypto.Digest
	done    map[crypto.Digest]bool
	added   int // recorded by this run
}

// ErrNoJournalPlace is wrapped by Journaled.JournalPath errors when a block
// device's journal has no writable place (filetarget.JournalDirs): the restore then
// runs without a journal.
var ErrNoJournalPlace = errors.New("no writable place for a resume journal")

// ReadJournal reads the journal at path: its header and the chunks it
// records. A missing journal returns an error wrapping os.ErrNotExist.
func ReadJournal(path string) (JournalHeader, map[crypto.Digest]bool, error) {
	var h JournalHeader
	data, err := os.ReadFile(path)
	if err != nil {
		return h, nil, err
	}
	line, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || json.Unmarshal(line, &h) != nil {
		return h, nil, fmt.Errorf("journal %s: unreadable header", path)
	}
	done := map[crypto.Digest]bool{}
	for len(rest) > 0 {
		line, rest, ok = bytes.Cut(rest, []byte{'\n'})
		var d crypto.Digest
		if !ok || len(line) != 2*len(d) {
			break // torn last line
		}
		if _, err := hex.Decode(d[:], line); err != nil {
			return h, nil, fmt.Errorf("journal %s: bad line %q", path, line)
		}
		done[d] = true
	}
	return h, done, nil
}

// CreateJournal starts a new journal at path for h, replacing any: the
// header is written and synced under a temporary name, then renamed into
// place, so a journal is never seen without its header.
func CreateJournal(path string, h JournalHeader) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	_, err = f.Write(mustHeader(h))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return &Journal{path: path, f: f, done: map[crypto.Digest]bool{}}, nil
}

// ResumeJournal opens the journal at path for appending after checking
// that it belongs to h (else an error wrapping ErrJournalMismatch), and
// returns it with the chunks it records as done.
func ResumeJournal(path string, h JournalHeader) (*Journal, error) {
	got, done, err := ReadJournal(path)
	if err != nil {
		return nil, err
	}
	if got != h {
		return nil, fmt.Errorf("%w: it restored %s %s (index %.12s…, %d bytes), this is %s %s (index %.12s…, %d bytes); run without --resume to start over",
			ErrJournalMismatch, got.Snapshot, got.Archive, got.IndexCsum, got.Size, h.Snapshot, h.Archive, h.IndexCsum, h.Size)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// Drop a torn last line, so that appends start on a line of their own.
	valid := int64(len(mustHeader(h))) + int64(len(done))*(2*int64(len(crypto.Digest{}))+1)
	if err := f.Truncate(valid); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	return &Journal{path: path, f: f, done: done}, nil
}

func mustHeader(h JournalHeader) []byte {
	b, _ := json.Marshal(h)
	return append(b, '\n')
}

// Done returns the chunks the journal recorded as durable before this run.
func (j *Journal) Done() map[crypto.Digest]bool { return j.done }

// Path returns the journal's file name ("" for a nil journal).
func (j *Journal) Path() string {
	if j == nil {
		return ""
	}
	return j.path
}

// Add notes a chunk written to every offset it fills; Flush records it.
func (j *Journal) Add(d crypto.Digest) {
	j.mu.Lock()
	j.pending = append(j.pending, d)
	j.mu.Unlock()
}

// Flush makes the chunks added so far durable on target (sync) and then
// records them in the journal (appended and synced). A chunk is never
// recorded before its data is synced.
func (j *Journal) Flush(target Target) error {
	j.mu.Lock()
	batch := j.pending
	j.pending = nil
	j.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := target.Sync(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(j.f, len(batch)*65)
	for _, d := range batch {
		w.WriteString(d.String())
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.mu.Lock()
	j.added += len(batch)
	j.mu.Unlock()
	return nil
}

// flushEvery flushes j to target (Flush) every JournalInterval until the
// function it returns is called, which flushes once more and returns;
// fail receives a flush's error. A nil journal does nothing.
func (j *Journal) flushEvery(target Target, fail func(error)) (stop func()) {
	if j == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(JournalInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := j.Flush(target); err != nil {
					fail(err)
				}
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if err := j.Flush(target); err != nil {
			fail(err)
		}
	}
}

// Recorded returns how many chunks the journal records as durable: those
// of earlier runs and those this run flushed.
func (j *Journal) Recorded() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.done) + j.added
}

// Close closes the journal file, keeping it for a resume. A nil journal
// (a restore without one) does nothing.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	return j.f.Close()
}

// Remove closes and removes the journal. A nil journal does nothing.
func (j *Journal) Remove() error {
	if j == nil {
		return nil
	}
	j.f.Close()
	err := os.Remove(j.path)
	syncDir(filepath.Dir(j.path))
	return err
}

// RemoveJournal removes the journal at path, if any, before a restore
// starts over: its chunks are no longer to be trusted once the partial
// output is emptied.
func RemoveJournal(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	syncDir(filepath.Dir(path))
	return err
}

// syncDir makes a directory entry change durable (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Completion is what a journal keeps of a restore that finished: when, and
// the identity of the target it left, the evidence that a later --resume
// finds the same target and not one changed or replaced since. For a file:
// device, inode, size and modification time (ns) of the committed file;
// for a block device: its device number and size (the caller reads its
// data back before calling it complete).
type Completion struct {
	Finished time.Time `json:"finished"`
	Dev      uint64    `json:"dev,omitempty"`
	Ino      uint64    `json:"ino,omitempty"`
	Rdev     uint64    `json:"rdev,omitempty"`
	Size     int64     `json:"size"`
	MtimeNs  int64     `json:"mtime-ns,omitempty"`
}

// completePrefix starts the line of a journal that records a completion.
const completePrefix = "complete "

// Same reports whether c and o name the same target in the same state
// (Finished not compared).
func (c Completion) Same(o Completion) bool {
	c.Finished, o.Finished = time.Time{}, time.Time{}
	return c == o
}

// Complete replaces the journal by the record of a finished restore: its
// header and one line "complete {Completion}" (written and synced under a
// temporary name, then renamed into place), and closes it. A nil journal
// does nothing.
func (j *Journal) Complete(h JournalHeader, c Completion) error {
	if j == nil {
		return nil
	}
	j.f.Close()
	b, _ := json.Marshal(c)
	data := append(mustHeader(h), completePrefix...)
	data = append(append(data, b...), '\n')
	tmp := j.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		os.Remove(tmp)
		os.Remove(j.path) // a journal of durable chunks no longer tells the truth either
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	syncDir(filepath.Dir(j.path))
	return nil
}

// ReadCompletion returns the completion the journal at path records, or
// nil when it records none (an interrupted restore's journal). A missing
// journal returns an error wrapping os.ErrNotExist.
func ReadCompletion(path string) (JournalHeader, *Completion, error) {
	var h JournalHeader
	data, err := os.ReadFile(path)
	if err != nil {
		return h, nil, err
	}
	line, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || json.Unmarshal(line, &h) != nil {
		return h, nil, fmt.Errorf("journal %s: unreadable header", path)
	}
	line, _, ok = bytes.Cut(rest, []byte{'\n'})
	if !ok || !bytes.HasPrefix(line, []byte(completePrefix)) {
		return h, nil, nil
	}
	var c Completion
	if json.Unmarshal(line[len(completePrefix):], &c) != nil {
		return h, nil, nil
	}
	return h, &c, nil
}
