package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// BadCopies is a Store that can read the copies of a chunk kept aside as
// damaged under BadName ("<digest>.N.bad"; a directory's prefix directory,
// a bucket's chunk key with the suffix). PBS 4.0's verify, before its fix
// for transient S3 errors (PBS bug 6665), renamed intact chunks so: such a
// copy may be the only one there is. Readers try these copies last, only
// for a chunk whose every ordinary copy is missing or damaged (Salvage),
// and use one only when it passes the chunk's own check.
type BadCopies interface {
	// ListBadCopies returns the names (BadName(d, n), n below
	// MaxBadGenerations, n ascending) of the copies of d kept aside; none
	// when there are none. It never follows a symbolic link and never
	// returns another name, whatever the store holds. Its errors say that
	// the copies could not be looked for (store unavailable, access
	// denied, a listing that failed).
	ListBadCopies(ctx context.Context, d crypto.Digest) ([]string, error)
	// ReadBadCopy reads the copy name (one ListBadCopies returned) as
	// Store.ReadChunk reads a chunk: appended to buf[:0], at most limit
	// bytes (else ErrTooLarge, unread), ErrEmpty for 0 bytes, ErrNotFound
	// when it is gone. A name that is not a BadName fails. Errors name
	// the copy's file or object (BadCopyLocation).
	ReadBadCopy(ctx context.Context, name string, buf []byte, limit int) ([]byte, error)
	// BadCopyLocation returns where the copy name lives (file path or
	// object URL), for messages and reports.
	BadCopyLocation(name string) string
}

// ParseBadName returns the digest of the chunk a copy kept aside is named
// for, when name is exactly BadName(d, n) for some n below
// MaxBadGenerations (lowercase hex); false otherwise.
func ParseBadName(name string) (crypto.Digest, bool) {
	hexd, rest, ok := strings.Cut(name, ".")
	if !ok || len(hexd) != 64 || strings.ToLower(hexd) != hexd {
		return crypto.Digest{}, false
	}
	d, err := crypto.ParseDigest(hexd)
	if err != nil || len(rest) != len("0.bad") || rest[0] < '0' || int(rest[0]-'0') >= MaxBadGenerations || rest[1:] != ".bad" {
		return crypto.Digest{}, false
	}
	return d, true
}

// badCopySources returns the stores whose copies kept aside a reader of s
// tries: every member of a MemberStore that has them, in order of
// preference, or s itself.
func badCopySources(s Store) []BadCopies {
	stores := []Store{s}
	if m, ok := s.(MemberStore); ok {
		stores = m.Members()
	}
	var out []BadCopies
	for _, m := range stores {
		if b, ok := m.(BadCopies); ok {
			out = append(out, b)
		}
	}
	return out
}

// Salvage tries, for the chunk d whose every ordinary copy failed with
// failed (an error that proves it missing or damaged: Proven), the copies
// kept aside as damaged (BadCopies) in the stores of s: those of each
// member of a chain in order of preference, each store's in generation
// order. Each is read into buf (at most limit bytes) and handed to check,
// the reader's own check of the chunk (crypt mode, decoding, length,
// digest, keyed for an encrypted chunk); the first that check accepts is
// returned with its location (BadCopies.BadCopyLocation). Nothing is asked
// of a store unless Salvage is called, so readers call it only for a chunk
// that failed.
//
// When no copy passes, the error is failed itself when there is none at
// all; when there are some, failed with what each copy's failure was (still
// matching what failed matches: the copies prove nothing more). When a
// store's copies could not be looked for or read for a reason outside the
// data (Outside: a listing refused or timed out), the error wraps that
// reason too, so that it is Outside as well: the chunk is missing or
// damaged under its own name, and whether a copy kept aside would have
// served is unknown. The caller's ctx ending returns its error.
func Salvage(ctx context.Context, s Store, d crypto.Digest, failed error, buf []byte, limit int, check func(raw []byte) error) ([]byte, string, error) {
	var bad []string    // copies that failed, as "LOCATION: CAUSE"
	var outside []error // copies that could not be looked for or read
	for _, src := range badCopySources(s) {
		names, err := src.ListBadCopies(ctx, d)
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if err != nil {
			outside = append(outside, err)
			continue
		}
		for _, name := range names {
			loc := src.BadCopyLocation(name)
			raw, err := src.ReadBadCopy(ctx, name, buf, limit)
			if err == nil {
				if err = check(raw); err == nil {
					return raw, loc, nil
				}
			}
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			if !Proven(err) {
				outside = append(outside, err)
				continue
			}
			if !NamesLocation(err, loc) {
				err = &LocatedError{Location: loc, Err: err}
			}
			bad = append(bad, strings.TrimPrefix(err.Error(), "chunk "+d.String()+": "))
		}
	}
	var note string
	if len(bad) > 0 {
		note = fmt.Sprintf("; %d .bad cop%s failed too: %s", len(bad), plural(len(bad), "y", "ies"), strings.Join(bad, "; "))
	}
	if len(outside) > 0 {
		return nil, "", fmt.Errorf("%w%s; its .bad copies could not all be tried: %w", failed, note, JoinErrors(outside...))
	}
	if note == "" {
		return nil, "", failed
	}
	return nil, "", &salvageFailed{failed, note}
}

// salvageFailed is a chunk's failure with what its copies kept aside
// said, which only adds text: it matches what the chunk's failure does.
type salvageFailed struct {
	err  error
	note string
}

func (e *salvageFailed) Error() string { return e.err.Error() + e.note }
func (e *salvageFailed) Unwrap() error { return e.err }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// errNotBadName is the error of ReadBadCopy for a name that is not a
// BadName.
var errNotBadName = errors.New("not the name of a chunk copy kept aside (<64 hex>.<0-9>.bad)")

// NotBadName returns the error of BadCopies.ReadBadCopy for a name that
// is not a BadName (ParseBadName).
func NotBadName(name string) error { return fmt.Errorf("%q: %w", name, errNotBadName) }
