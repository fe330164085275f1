package bucket

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Retrying describes a request that has failed and is being retried: what
// it is, why its last attempt failed, and when the policy gives up on it
// (its first failure plus RetryFor). Every field is text of this program's
// own (HTTP status texts, object names reduced to safe characters), never
// the server's words.
type Retrying struct {
	// What names the request, e.g. "GET chunk 0123456789ab…",
	// "GET index.json.blob" or "LIST vm/100/" (a listing and its prefix).
	What string
	// Cause is why the last attempt failed, e.g. "500 Internal Server
	// Error", "connection refused", "stalled".
	Cause string
	// Until is when the policy gives up on the request.
	Until time.Time
}

// String is "WHAT (CAUSE) until HH:MM:SS" (local time).
func (r Retrying) String() string {
	return fmt.Sprintf("%s (%s) until %s", r.What, r.Cause, r.Until.Local().Format("15:04:05"))
}

// RetryWatch shows which requests are being retried, for progress
// reports: every Policy given it in Options.Watch (the members of a chain
// of stores, a store still being opened) reports there. Safe for
// concurrent use; the zero value is ready.
type RetryWatch struct {
	failing atomic.Int64             // requests being retried now
	note    atomic.Pointer[Retrying] // the latest retry
}

// Retrying returns the latest retry of a request while any request is
// still failing (false when none is being retried now).
func (w *RetryWatch) Retrying() (Retrying, bool) {
	if w == nil || w.failing.Load() <= 0 {
		return Retrying{}, false
	}
	r := w.note.Load()
	if r == nil {
		return Retrying{}, false
	}
	return *r, true
}

// describeRequest names req for a Retrying note: its method and object
// (a chunk by its digest's first 12 hex digits), or a listing and its
// prefix.
func describeRequest(req *http.Request) string {
	p := req.URL.EscapedPath()
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	base := path.Base(p)
	if q := req.URL.Query(); q.Has("list-type") || (req.Method == http.MethodGet && strings.HasSuffix(p, "/o")) {
		return "LIST " + safeName(q.Get("prefix"))
	}
	if strings.Contains(p, "/.chunks/") && isHex(base) && len(base) >= 12 {
		return req.Method + " chunk " + base[:12] + "…"
	}
	return req.Method + " " + safeName(base)
}

// isHex reports whether s is lower-case hex.
func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// safeName keeps letters, digits and "./-_:" of s (at most 64), replacing
// anything else by '?': object names may come from the store's listing.
func safeName(s string) string {
	var b strings.Builder
	for i, c := range s {
		if i >= 64 {
			b.WriteString("…")
			break
		}
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("./-_:", c):
			b.WriteRune(c)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// causeOf says why an attempt failed, in this program's words.
func causeOf(att *attempt, err error) string {
	switch {
	case att.stalled.Load():
		return "stalled: no byte moved for --io-timeout"
	case att.status.Load() != 0:
		s := int(att.status.Load())
		return fmt.Sprintf("%d %s", s, http.StatusText(s))
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "connection closed"
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return "timeout"
	}
	return "request failed"
}
