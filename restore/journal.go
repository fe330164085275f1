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

	"golang.org/x/sys/unix"

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
	// fan, when set, makes this a guest restore's journal with no file
	// of its own: Add and Flush go to the journals of its disks
	// (journalFan).
	fan *journalFan
}

// ErrNoJournalPlace is wrapped by Journaled.JournalPath errors when a block
// device's journal has no writable place (filetarget.JournalDirs): the restore then
// runs without a journal.
var ErrNoJournalPlace = errors.New("no writable place for a resume journal")

// ErrJournalUnsafe is wrapped by the journal functions' errors when the
// journal's name (or its temporary ".new" name) holds a symbolic link, or
// something other than a regular file of this user with one link: it may
// have been planted by whoever can write the directory, and nothing is
// read or written through it.
var ErrJournalUnsafe = errors.New("not a journal of this user (a symbolic link, a hard link or another file put there?): refused, nothing read or written through it")

// openJournal opens the journal file at path for flags (unix.O_RDONLY or
// unix.O_RDWR), never through a symbolic link, and only a regular file of
// this user with one link (else ErrJournalUnsafe). A missing journal
// returns an error wrapping os.ErrNotExist.
func openJournal(path string, flags int) (*os.File, error) {
	fd, err := unix.Open(path, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("journal %s: %w: it is a symbolic link", path, ErrJournalUnsafe)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := journalFileOK(path, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), path), nil
}

// journalFileOK refuses (ErrJournalUnsafe) a journal at path that is not
// a regular file of this user with one link.
func journalFileOK(path string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("journal %s: %w: it is a symbolic link", path, ErrJournalUnsafe)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("journal %s: %w: it is not a regular file", path, ErrJournalUnsafe)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("journal %s: %w: it belongs to user %d", path, ErrJournalUnsafe, st.Uid)
	case st.Nlink != 1:
		return fmt.Errorf("journal %s: %w: it has %d links", path, ErrJournalUnsafe, st.Nlink)
	}
	return nil
}

// readJournalFile reads the whole journal at path (openJournal's checks).
func readJournalFile(path string) ([]byte, error) {
	f, err := openJournal(path, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return data, nil
}

// ReadJournal reads the journal at path: its header and the chunks it
// records. A missing journal returns an error wrapping os.ErrNotExist; a
// symbolic link or a file not this user's, one wrapping ErrJournalUnsafe.
func ReadJournal(path string) (JournalHeader, map[crypto.Digest]bool, error) {
	data, err := readJournalFile(path)
	if err != nil {
		return JournalHeader{}, nil, err
	}
	return parseJournal(path, data)
}

// parseJournal parses the journal data read from path.
func parseJournal(path string, data []byte) (JournalHeader, map[crypto.Digest]bool, error) {
	var h JournalHeader
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

// replaceJournal writes data to a new file under the temporary name
// path+".new" and renames it into place, relative to a descriptor of the
// directory: a stale temporary file (or a link planted there) is removed,
// never followed, and the new one is created exclusively; a symbolic link
// at path is refused (ErrJournalUnsafe). It returns
// the new file, open for reading and writing, after syncing it and the
// directory.
func replaceJournal(path string, data []byte) (*os.File, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	tmp := name + ".new"
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, fmt.Errorf("journal %s: %w: it is a symbolic link", path, ErrJournalUnsafe)
	}
	if err := unix.Unlinkat(dfd, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, &os.PathError{Op: "remove", Path: path + ".new", Err: err}
	}
	fd, err := unix.Openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("journal %s.new: %w: it appeared again while it was being created", path, ErrJournalUnsafe)
		}
		return nil, &os.PathError{Op: "create", Path: path + ".new", Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		f.Close()
		unix.Unlinkat(dfd, tmp, 0)
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	unix.Fsync(dfd)
	return f, nil
}

// CreateJournal starts a new journal at path for h, replacing any: the
// header is written and synced under a temporary name, then renamed into
// place, so a journal is never seen without its header. Nothing is opened
// through a symbolic link; one at path is refused (ErrJournalUnsafe).
func CreateJournal(path string, h JournalHeader) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, err := replaceJournal(path, mustHeader(h))
	if err != nil {
		return nil, err
	}
	return &Journal{path: path, f: f, done: map[crypto.Digest]bool{}}, nil
}

// ResumeJournal opens the journal at path for appending after checking
// that it belongs to h (else an error wrapping ErrJournalMismatch), and
// returns it with the chunks it records as done. A symbolic link or a
// file not this user's at path is refused (ErrJournalUnsafe).
func ResumeJournal(path string, h JournalHeader) (*Journal, error) {
	f, err := openJournal(path, unix.O_RDWR)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	got, done, err := parseJournal(path, data)
	if err != nil {
		f.Close()
		return nil, err
	}
	if got != h {
		f.Close()
		return nil, fmt.Errorf("%w: it restored %s %s (index %.12s…, %d bytes), this is %s %s (index %.12s…, %d bytes); run without --resume to start over",
			ErrJournalMismatch, got.Snapshot, got.Archive, got.IndexCsum, got.Size, h.Snapshot, h.Archive, h.IndexCsum, h.Size)
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
	if j.fan != nil {
		j.fan.add(d)
		return
	}
	j.mu.Lock()
	j.pending = append(j.pending, d)
	j.mu.Unlock()
}

// Flush makes the chunks added so far durable on target (sync) and then
// records them in the journal (appended and synced). A chunk is never
// recorded before its data is synced.
func (j *Journal) Flush(target Target) error {
	if j.fan != nil {
		return j.fan.flush()
	}
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
// device, inode, size, modification time and status-change time (ns; a
// user can set the modification time back, not the change time) of the
// committed file;
// for a block device: its device number and size (the caller reads its
// data back before calling it complete).
type Completion struct {
	Finished time.Time `json:"finished"`
	Dev      uint64    `json:"dev,omitempty"`
	Ino      uint64    `json:"ino,omitempty"`
	Rdev     uint64    `json:"rdev,omitempty"`
	Size     int64     `json:"size"`
	MtimeNs  int64     `json:"mtime-ns,omitempty"`
	CtimeNs  int64     `json:"ctime-ns,omitempty"`
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
	f, err := replaceJournal(j.path, data)
	if err != nil {
		os.Remove(j.path) // a journal of durable chunks no longer tells the truth either
		return err
	}
	return f.Close()
}

// ReadCompletion returns the completion the journal at path records, or
// nil when it records none (an interrupted restore's journal). A missing
// journal returns an error wrapping os.ErrNotExist; a symbolic link or a
// file not this user's, one wrapping ErrJournalUnsafe.
func ReadCompletion(path string) (JournalHeader, *Completion, error) {
	var h JournalHeader
	data, err := readJournalFile(path)
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
