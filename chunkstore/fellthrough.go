package chunkstore

import (
	"errors"
	"sync"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// MaxFellThrough is how many copies that fell through a Chain lists in
// full (MemberStats.FellThrough), over all its members together; the
// rest are counted (MemberStats.FellThroughUnlisted), so that the record's
// memory does not grow with the store.
const MaxFellThrough = 1000

// Why a member of a Chain could not serve a chunk (FellThrough.Reason).
const (
	ReasonMissing    = "missing"    // not there, or 0 bytes (evicted)
	ReasonDamaged    = "damaged"    // there, but failed a check (size, CRC, digest, decryption)
	ReasonUnreadable = "unreadable" // could not be read for a cause outside the data (unreachable, denied)
)

// FellThrough is one chunk that a member of a Chain could not serve, so
// that the chain read on in the next member.
type FellThrough struct {
	Digest string `json:"digest"`
	// Reason is ReasonMissing, ReasonDamaged or ReasonUnreadable.
	Reason string `json:"reason"`
	// Error is what the member's copy failed with (store-controlled
	// text: escape it before printing it on a terminal).
	Error string `json:"error"`
	// ServedBy is the member that served the chunk in the end; "" when
	// none had a good copy.
	ServedBy string `json:"served-by,omitempty"`
}

// FellThroughRecorder is a Store of several copies (a Chain) that can
// hand on each chunk a copy could not serve (see Chain.FellThroughTo).
type FellThroughRecorder interface {
	// FellThroughTo sets the function that receives them.
	FellThroughTo(f func(store string, fell FellThrough))
}

var _ FellThroughRecorder = (*Chain)(nil)

// fallLog is a Chain's record of the copies that fell through: those of a
// chunk still being read wait in pending until a member serves it or none
// is left, then are listed under their member (MaxFellThrough in all) or
// counted.
type fallLog struct {
	mu       sync.Mutex
	pending  map[crypto.Digest][]pendingFall
	listed   [][]FellThrough // per member
	unlisted []int64         // per member
	n        int             // listed over all members
	sink     func(store string, f FellThrough)
}

// pendingFall is one copy that fell through, its chunk not resolved yet.
type pendingFall struct {
	member      int
	reason, err string
}

// reasonOf classifies why a member's copy fell through.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, ErrEmpty), Missing(err):
		return ReasonMissing
	case Damaged(err):
		return ReasonDamaged
	}
	return ReasonUnreadable
}

// fell records that member m's copy of d fell through with err.
func (c *Chain) fell(d crypto.Digest, m int, reason string, err error) {
	l := &c.falls
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[crypto.Digest][]pendingFall{}
	}
	l.pending[d] = append(l.pending[d], pendingFall{m, reason, err.Error()})
}

// resolve lists the copies of d that fell through, served in the end by
// member by (-1: by none), and hands them to the sink (see
// FellThroughTo).
func (c *Chain) resolve(d crypto.Digest, by int) {
	l := &c.falls
	l.mu.Lock()
	defer l.mu.Unlock()
	falls, ok := l.pending[d]
	if !ok {
		return
	}
	delete(l.pending, d)
	if l.listed == nil {
		l.listed = make([][]FellThrough, len(c.members))
		l.unlisted = make([]int64, len(c.members))
	}
	served := ""
	if by >= 0 {
		served = c.members[by].String()
	}
	for _, p := range falls {
		f := FellThrough{Digest: d.String(), Reason: p.reason, Error: p.err, ServedBy: served}
		if l.n < MaxFellThrough {
			l.listed[p.member] = append(l.listed[p.member], f)
			l.n++
		} else {
			l.unlisted[p.member]++
		}
		if l.sink != nil {
			l.sink(c.members[p.member].String(), f)
		}
	}
}

// FellThroughTo sets a function that receives every chunk a member could
// not serve (the member's name and why), once the chunk was served by a
// later member or by none; calls come from the readers' goroutines, one
// at a time. Call it before the chain is used. Stats lists the first
// MaxFellThrough of them whatever is set here.
func (c *Chain) FellThroughTo(f func(store string, fell FellThrough)) {
	c.falls.mu.Lock()
	c.falls.sink = f
	c.falls.mu.Unlock()
}

// fellStats fills the fall-through lists of out (Stats).
func (c *Chain) fellStats(out []MemberStats) {
	l := &c.falls
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listed == nil {
		return
	}
	for i := range out {
		out[i].FellThrough = append([]FellThrough(nil), l.listed[i]...)
		out[i].FellThroughUnlisted = l.unlisted[i]
	}
}
