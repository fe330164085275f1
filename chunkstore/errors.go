package chunkstore

import (
	"context"
	"errors"
	"net"
	"net/url"
	"syscall"
)

// ErrUnavailable is wrapped by Store errors whose cause lies outside the
// data: the store could not be reached, kept failing or throttling past the
// retry window, or timed out. Retrying later may succeed, unlike for
// ErrNotFound or a damaged chunk.
var ErrUnavailable = errors.New("store unavailable")

// Outside reports whether err's cause lies outside the data, so that a
// later retry may help (exit code 3): ErrUnavailable or ErrDenied (store
// unreachable, throttled past the retry window, credentials refused), a
// network error, a deadline that expired, or a local I/O failure of the
// kind a retry elsewhere or later can fix (EIO, ENOSPC, EDQUOT, EROFS,
// EACCES, EPERM, EAGAIN, ENOMEM). Missing or damaged data is not outside:
// retrying will not fix it. A nil error is not outside.
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
