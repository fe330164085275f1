package chunkstore

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"syscall"
)

// ErrDamaged is matched (errors.Is) by every error for bytes that were read
// and failed a check: the blob codec's errors (ErrTruncated, ErrEmpty,
// ErrUnknownMagic, ErrObsoleteMagic, ErrCRC, ErrDecrypt, ErrDecompress,
// ErrTooLarge) and DecodeChunk's (ErrDigestMismatch, ErrLengthMismatch,
// ErrCryptModeMismatch). Other packages make their own kinds with
// DamageKind.
var ErrDamaged = errors.New("damaged")

// kind is a sentinel error that also matches a class sentinel (ErrDamaged
// or ErrNotFound) with errors.Is, keeping its own text.
type kind struct {
	msg   string
	class error
}

// Error returns the kind's text.
func (k *kind) Error() string { return k.msg }

// Is reports whether target is the kind's class.
func (k *kind) Is(target error) bool { return target == k.class }

// DamageKind returns a new sentinel error with text msg that errors.Is
// also matches to ErrDamaged: a kind of check that read bytes can fail.
func DamageKind(msg string) error { return &kind{msg: msg, class: ErrDamaged} }

// MissingKind returns a new sentinel error with text msg that errors.Is
// also matches to ErrNotFound: something the store said definitively is
// not there.
func MissingKind(msg string) error { return &kind{msg: msg, class: ErrNotFound} }

// Damaged reports whether err proves the data damaged: it wraps ErrDamaged
// (bytes were read and failed a check) and no cause outside the data
// (Outside).
func Damaged(err error) bool { return errors.Is(err, ErrDamaged) && !Outside(err) }

// Missing reports whether err proves the data missing: it wraps
// ErrNotFound (the store said definitively that it does not exist: a 404
// NoSuchKey, ENOENT) and no cause outside the data (Outside).
func Missing(err error) bool { return errors.Is(err, ErrNotFound) && !Outside(err) }

// Proven reports whether err proves a chunk damaged or missing (Damaged or
// Missing). Every other error of a chunk read proves nothing about the
// chunk (a status or error the backend did not classify, credentials,
// quotas, local I/O): the run could not complete, and the chunk is never
// taken for damage (never zero-filled, never listed as damaged).
func Proven(err error) bool { return Damaged(err) || Missing(err) }

// ErrUnavailable is wrapped by Store errors whose cause lies outside the
// data: the store could not be reached, kept failing or throttling past the
// retry window, or timed out. Retrying later may succeed, unlike for
// ErrNotFound or a damaged chunk.
var ErrUnavailable = errors.New("store unavailable")

// Outside reports whether err wraps a cause known to lie outside the data,
// so that a later retry may help (exit code 3): ErrUnavailable or ErrDenied
// (store unreachable, throttled past the retry window, credentials
// refused), a network error, a deadline that expired, or a local I/O
// failure of the kind a retry elsewhere or later can fix (EIO, ENOSPC,
// EDQUOT, EROFS, EACCES, EPERM, EAGAIN, ENOMEM). Such an error proves
// nothing about the data even when it also wraps ErrNotFound or ErrDamaged
// (a chain of stores, one of which could not be read). A nil error is not
// outside. An error that is not outside is not therefore damage: see
// Damaged and Missing, which classify positively.
func Outside(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrDenied) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// Network errors by type: syscall.Errno and *fs.PathError also have
	// a Timeout method, so the net.Error interface would catch every
	// local error.
	var op *net.OpError
	var dns *net.DNSError
	var ue *url.Error
	if errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &ue) {
		return true
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EIO, syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM,
			syscall.EAGAIN, syscall.ENOMEM, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ETIMEDOUT,
			syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EPIPE:
			return true
		}
	}
	return false
}

// StoreMissing returns err (the error of opening a store) marked as a store
// that is not there at all: a bucket that does not exist, a directory
// without a datastore. It matches ErrNotFound (the store is missing, not
// a chunk) and ErrUnavailable, so that it is Outside: it proves nothing
// about the data, and mounting the disk or creating the bucket can help.
// Its text is err's.
func StoreMissing(err error) error { return &storeMissing{err} }

type storeMissing struct{ err error }

func (e *storeMissing) Error() string   { return e.err.Error() }
func (e *storeMissing) Unwrap() []error { return []error{e.err, ErrNotFound, ErrUnavailable} }

// LocatedError is a store error about one file or object: where it is (a
// file path or object URL, as ChunkLocation names a chunk's) and why. Its
// text is "LOCATION: CAUSE"; it matches what its cause matches.
type LocatedError struct {
	Location string
	Err      error
}

// Error returns "LOCATION: CAUSE".
func (e *LocatedError) Error() string { return e.Location + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *LocatedError) Unwrap() error { return e.Err }

// NamesLocation reports whether err already names loc as the file or
// object it is about: somewhere in err's tree (errors.Unwrap, joined
// errors) a *LocatedError with Location loc, or an *fs.PathError with Path
// loc. A caller that adds the location to a message adds it only when it
// does not.
func NamesLocation(err error, loc string) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *LocatedError:
		if e.Location == loc {
			return true
		}
	case *fs.PathError:
		if e.Path == loc {
			return true
		}
	}
	switch u := err.(type) {
	case wrapper:
		return NamesLocation(u.Unwrap(), loc)
	case multiWrapper:
		for _, e := range u.Unwrap() {
			if NamesLocation(e, loc) {
				return true
			}
		}
	}
	return false
}

// wrapper is an error that wraps one cause (fmt.Errorf with one %w).
type wrapper interface{ Unwrap() error }

// multiWrapper is an error that wraps several (errors.Join, JoinErrors).
type multiWrapper interface{ Unwrap() []error }
