package verify

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// State is the record of an incremental verify: which chunks were verified
// and when. Chunks verified less than ReverifyAfter ago are not checked
// again; every chunk verified in this run is recorded. A nil *State records
// nothing and calls every chunk stale. Safe for concurrent use.
//
// The state file (WriteTo, ReadState) is binary, little endian: the magic
// "PBSDVST1", the SHA-256 of the store's name, the entry count (uint64),
// then per chunk its digest (32 bytes), length (uint32), flags (uint32, bit
// 0: encrypted) and verification time (int64, Unix seconds), sorted by
// their first 40 bytes; then the SHA-256 of everything before it.
type State struct {
	ReverifyAfter time.Duration // 0: every chunk is checked again (and recorded)

	mu      sync.Mutex
	store   string
	entries map[chunkKey]int64
}

var stateMagic = []byte("PBSDVST1")

const stateEntrySize = 32 + 4 + 4 + 8

// NewState returns an empty state for the store named store (its String()).
func NewState(store string, reverifyAfter time.Duration) *State {
	return &State{ReverifyAfter: reverifyAfter, store: store, entries: map[chunkKey]int64{}}
}

// Len returns the number of chunks recorded.
func (s *State) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Fresh reports whether the chunk was verified less than ReverifyAfter
// before now.
func (s *State) Fresh(d crypto.Digest, length int, encrypted bool, now time.Time) bool {
	if s == nil || s.ReverifyAfter <= 0 {
		return false
	}
	s.mu.Lock()
	t, ok := s.entries[chunkKey{d, int32(length), encrypted}]
	s.mu.Unlock()
	return ok && now.Sub(time.Unix(t, 0)) < s.ReverifyAfter
}

// Verified records that the chunk passed its check at time at.
func (s *State) Verified(d crypto.Digest, length int, encrypted bool, at time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.entries[chunkKey{d, int32(length), encrypted}] = at.Unix()
	s.mu.Unlock()
}

// Forget drops the chunk's record: it was found damaged, so the next run
// checks it again whatever ReverifyAfter says.
func (s *State) Forget(d crypto.Digest, length int, encrypted bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.entries, chunkKey{d, int32(length), encrypted})
	s.mu.Unlock()
}

// ErrBadState is wrapped by ReadState's errors for a damaged or foreign
// state file.
var ErrBadState = errors.New("unusable verify state")

// ReadState reads a state file of size bytes written by WriteTo for the
// store named store. A damaged file (bad magic, length or checksum,
// unsorted entries) or one written for another store returns an error
// wrapping ErrBadState: the caller starts from an empty state.
func ReadState(r io.Reader, size int64, store string, reverifyAfter time.Duration) (*State, error) {
	const head = 8 + 32 + 8
	if size < head+sha256.Size || (size-head-sha256.Size)%stateEntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not the length of a state file", ErrBadState, size)
	}
	h := sha256.New()
	br := bufio.NewReader(io.TeeReader(io.LimitReader(r, size-sha256.Size), h))
	hdr := make([]byte, head)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if !bytes.Equal(hdr[:8], stateMagic) {
		return nil, fmt.Errorf("%w: not a pbsdirect verify state file", ErrBadState)
	}
	if sum := sha256.Sum256([]byte(store)); !bytes.Equal(hdr[8:40], sum[:]) {
		return nil, fmt.Errorf("%w: written for another store", ErrBadState)
	}
	n := binary.LittleEndian.Uint64(hdr[40:])
	if n != uint64((size-head-sha256.Size)/stateEntrySize) {
		return nil, fmt.Errorf("%w: entry count %d does not match the length", ErrBadState, n)
	}
	s := NewState(store, reverifyAfter)
	var prev []byte
	e := make([]byte, stateEntrySize)
	for i := uint64(0); i < n; i++ {
		if _, err := io.ReadFull(br, e); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadState, err)
		}
		if prev != nil && bytes.Compare(prev, e[:40]) >= 0 {
			return nil, fmt.Errorf("%w: entries out of order", ErrBadState)
		}
		prev = append(prev[:0], e[:40]...)
		var k chunkKey
		copy(k.digest[:], e)
		k.length = int32(binary.LittleEndian.Uint32(e[32:]))
		k.encrypted = binary.LittleEndian.Uint32(e[36:])&1 != 0
		s.entries[k] = int64(binary.LittleEndian.Uint64(e[40:]))
	}
	want := h.Sum(nil)
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, want) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadState)
	}
	return s, nil
}

// WriteTo writes the state file, leaving out entries older than
// ReverifyAfter before now (they would be checked again anyway; with
// ReverifyAfter 0 every entry is kept). It returns the bytes written.
func (s *State) WriteTo(w io.Writer, now time.Time) (int64, error) {
	s.mu.Lock()
	list := make([][stateEntrySize]byte, 0, len(s.entries))
	for k, t := range s.entries {
		if s.ReverifyAfter > 0 && now.Sub(time.Unix(t, 0)) >= s.ReverifyAfter {
			continue
		}
		var e [stateEntrySize]byte
		copy(e[:], k.digest[:])
		binary.LittleEndian.PutUint32(e[32:], uint32(k.length))
		if k.encrypted {
			binary.LittleEndian.PutUint32(e[36:], 1)
		}
		binary.LittleEndian.PutUint64(e[40:], uint64(t))
		list = append(list, e)
	}
	store := s.store
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b [stateEntrySize]byte) int { return bytes.Compare(a[:40], b[:40]) })
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	sum := sha256.Sum256([]byte(store))
	bw.Write(stateMagic)
	bw.Write(sum[:])
	bw.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(list))))
	for i := range list {
		bw.Write(list[i][:])
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	n := int64(8 + 32 + 8 + len(list)*stateEntrySize)
	m, err := w.Write(h.Sum(nil))
	return n + int64(m), err
}

// MaxStateSize bounds a state file read: 48 bytes a chunk, 100 M chunks.
const MaxStateSize = 48 << 30 / 10

// StateFrom returns the state for the store named store from b, the
// content of a state file, or readErr, why it could not be read. A state
// not there yet (readErr wraps chunkstore.ErrNotFound) starts empty; so
// does one that could not be read or is damaged or foreign, and then
// ignored says why, for a warning.
func StateFrom(b []byte, readErr error, store string, reverifyAfter time.Duration) (st *State, ignored error) {
	err := readErr
	if err == nil {
		if st, err = ReadState(bytes.NewReader(b), int64(len(b)), store, reverifyAfter); err == nil {
			return st, nil
		}
	}
	if errors.Is(err, chunkstore.ErrNotFound) {
		err = nil
	}
	return NewState(store, reverifyAfter), err
}

// ParseAge parses a --reverify-after age: a duration with a day unit too,
// "30d", "12h", "1d12h", or "0". Errors say what is wanted.
func ParseAge(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	var d time.Duration
	if i := strings.Index(s, "d"); i >= 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > 36500 {
			return 0, fmt.Errorf("%q: want a number of days before d", s)
		}
		d, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return d, nil
		}
	}
	r, err := time.ParseDuration(s)
	if err != nil || r < 0 {
		return 0, fmt.Errorf("%q: want e.g. 30d, 12h or 1d12h", s)
	}
	return d + r, nil
}
