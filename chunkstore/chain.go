package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Chain reads a datastore from several copies in order of preference (for
// example the PBS 4 S3 local cache directory, the bucket, a mirror bucket):
// each chunk from the first member that has a copy, content files from the
// first member that has them (a snapshot's files from the member its
// manifest came from first), listings as the union of every member's. A missing, 0-byte (evicted), unreadable or
// unavailable copy falls through to the next member; a copy that reads but
// fails its check (digest, CRC, decryption) falls through when the reader
// asks for the next copy with ReadChunkFrom. Chain counts per member the
// chunks and bytes it served and the copies that fell through. It is
// read-only, and safe for concurrent use.
type Chain struct {
	members []Store
	leftOut []error // stores of the datastore that could not be opened (NewPartialChain)
	counts  []memberCounts
	union   unionState // listings over every member, snapshot pins, warnings
	falls   fallLog    // the chunks members could not serve, and why
	flags   []string   // the flag each member was given with (NameFlags); nil: --store
}

type memberCounts struct {
	chunks, bytes, missing, damaged atomic.Int64
}

// MemberStats is what one member of a Chain contributed.
type MemberStats struct {
	Store   string `json:"store"`
	Chunks  int64  `json:"chunks"`  // chunks served (and accepted by the reader)
	Bytes   int64  `json:"bytes"`   // encoded bytes of those chunks
	Missing int64  `json:"missing"` // copies not there (missing, 0-byte, unreadable): fell through
	Damaged int64  `json:"damaged"` // copies that failed their check: fell through
	// FellThrough names the chunks this member could not serve and why
	// (the first MaxFellThrough of the chain's, in the order they were
	// resolved); FellThroughUnlisted counts the rest.
	FellThrough         []FellThrough `json:"fell-through,omitempty"`
	FellThroughUnlisted int64         `json:"fell-through-unlisted,omitempty"`
}

var (
	_ Store        = (*Chain)(nil)
	_ FallThrough  = (*Chain)(nil)
	_ Warner       = (*Chain)(nil)
	_ ChunkStatter = (*Chain)(nil)
)

// NewChain returns the chain of members, in order of preference. It needs
// at least one member; Close closes them all.
func NewChain(members ...Store) (*Chain, error) {
	if len(members) == 0 {
		return nil, errors.New("a chain of stores needs at least one store")
	}
	return &Chain{members: members, counts: make([]memberCounts, len(members))}, nil
}

// NewPartialChain returns the chain of members (see NewChain) for a
// datastore some of whose copies could not be opened: leftOut holds an
// error for each, naming it. What the members lack may be in those, so it
// is never proven missing: when no member has a chunk or file, the error
// joins the members' errors and leftOut's, each matching ErrUnavailable
// (Outside), and chunkstore.Missing is false for it.
func NewPartialChain(members []Store, leftOut []error) (*Chain, error) {
	c, err := NewChain(members...)
	if err != nil {
		return nil, err
	}
	for _, e := range leftOut {
		if !Outside(e) {
			e = fmt.Errorf("%w: %w", ErrUnavailable, e)
		}
		c.leftOut = append(c.leftOut, e)
	}
	return c, nil
}

// LeftOut returns the errors of the stores left out when the chain was
// opened (see NewPartialChain), nil for none.
func (c *Chain) LeftOut() []error { return c.leftOut }

// NameFlags sets the command-line flag each member was given with, in the
// members' order ("--store", "--from"), for the warnings that name
// members; without it, or past its end, a member is named "--store".
// Call it before the chain is used.
func (c *Chain) NameFlags(flags ...string) { c.flags = flags }

// flagOf returns the flag member m was given with (NameFlags).
func (c *Chain) flagOf(m int) string {
	if m < len(c.flags) && c.flags[m] != "" {
		return c.flags[m]
	}
	return "--store"
}

// Members returns the member stores, in order of preference.
func (c *Chain) Members() []Store { return c.members }

// String returns the members' names joined by " > " (the order of
// preference).
func (c *Chain) String() string {
	names := make([]string, len(c.members))
	for i, m := range c.members {
		names[i] = m.String()
	}
	return strings.Join(names, " > ")
}

// ChunkLocation names where the first member keeps the chunk.
func (c *Chain) ChunkLocation(d crypto.Digest) string { return c.members[0].ChunkLocation(d) }

// ReadChunk reads d from the first member that has a copy (see
// ReadChunkFrom) and counts it as served.
func (c *Chain) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	raw, m, err := c.ReadChunkFrom(ctx, d, buf, limit, 0)
	if err == nil {
		c.Served(d, m, len(raw))
	}
	return raw, err
}

// ReadChunkFrom reads d, at most limit bytes (see Store.ReadChunk), from
// the first member at index from or later that returns a copy, and returns
// it with that member's index. An oversized copy falls through like a
// missing one. Members that
// fail (missing, 0-byte, unreadable, unavailable) are counted as missing and
// skipped. When none has a copy, the error joins every member's error and
// those of the stores left out (NewPartialChain), so that errors.Is finds
// ErrNotFound, ErrUnavailable, … of any of them; the
// caller's ctx ending stops at once with its error. The copy is not yet
// counted as served: the reader calls Served once it passed its check, or
// Damaged and reads on from the next member. Each member that failed is
// recorded as fallen through for d (Stats, FellThroughTo).
func (c *Chain) ReadChunkFrom(ctx context.Context, d crypto.Digest, buf []byte, limit, from int) ([]byte, int, error) {
	var errs []error
	for i := from; i < len(c.members); i++ {
		raw, err := c.members[i].ReadChunk(ctx, d, buf, limit)
		if err == nil {
			return raw, i, nil
		}
		if ctx.Err() != nil {
			return nil, i, ctx.Err()
		}
		c.counts[i].missing.Add(1)
		c.fell(d, i, reasonOf(err), err)
		errs = append(errs, fmt.Errorf("%s: %w", c.members[i], err))
	}
	c.resolve(d, -1)
	errs = append(errs, c.leftOut...)
	if len(errs) == 0 {
		return nil, len(c.members), fmt.Errorf("chunk %s: %w: no further copy after %s", d, ErrNotFound, c.members[len(c.members)-1])
	}
	if len(errs) == 1 {
		return nil, len(c.members), errs[0]
	}
	return nil, len(c.members), fmt.Errorf("chunk %s: no store has a usable copy: %w", d, JoinErrors(errs...))
}

// Served counts a copy of d, of n encoded bytes, from member m that passed
// the reader's check; the members that could not serve d before it are
// listed as served by m.
func (c *Chain) Served(d crypto.Digest, m, n int) {
	c.counts[m].chunks.Add(1)
	c.counts[m].bytes.Add(int64(n))
	c.resolve(d, m)
}

// Damaged counts a copy of d from member m that failed the reader's check
// with err, and records it as fallen through.
func (c *Chain) Damaged(d crypto.Digest, m int, err error) {
	c.counts[m].damaged.Add(1)
	c.fell(d, m, ReasonDamaged, err)
}

// Stats returns what each member contributed, in order of preference.
func (c *Chain) Stats() []MemberStats {
	out := make([]MemberStats, len(c.members))
	for i, m := range c.members {
		k := &c.counts[i]
		out[i] = MemberStats{Store: m.String(), Chunks: k.chunks.Load(), Bytes: k.bytes.Load(), Missing: k.missing.Load(), Damaged: k.damaged.Load()}
	}
	c.fellStats(out)
	return out
}

// OpenFile opens rel from the first member that has it; a file of a
// snapshot directory whose manifest (index.json.blob) this chain opened is
// tried first in the member that served the manifest, so that a snapshot's
// files come from one copy where it can. A member that fails
// otherwise than with ErrNotFound falls through too; when none has it, the
// error joins every member's and those of the stores left out.
func (c *Chain) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	var errs []error
	for _, i := range c.openOrder(rel) {
		m := c.members[i]
		r, n, err := m.OpenFile(ctx, rel)
		if err == nil {
			c.opened(rel, i)
			return r, n, nil
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	errs = append(errs, c.leftOut...)
	if len(errs) == 1 {
		return nil, 0, errs[0]
	}
	return nil, 0, fmt.Errorf("%s: in none of the stores: %w", rel, JoinErrors(errs...))
}

// Close closes every member and returns the first error.
func (c *Chain) Close() error {
	var first error
	for _, m := range c.members {
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// JoinErrors returns an error whose message is the messages of errs joined
// by "; " and which matches (errors.Is, errors.As) any of them; nil for
// none, the error itself for one.
func JoinErrors(errs ...error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return joined(errs)
}

type joined []error

func (j joined) Error() string {
	msgs := make([]string, len(j))
	for i, e := range j {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (j joined) Unwrap() []error { return j }
