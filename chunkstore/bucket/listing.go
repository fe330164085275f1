package bucket

import (
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// ErrListing is wrapped by every error of a listing that the server answered
// in a way that cannot be completed (see Listing). Such a listing is never
// returned in part. It wraps chunkstore.ErrUnavailable: the provider, not
// the data, is at fault (exit code 3).
var ErrListing = fmt.Errorf("%w: bucket listing cannot be completed", chunkstore.ErrUnavailable)

// Listing checks the pages of one bucket listing (S3 ListObjectsV2, GCS
// objects.list) instead of trusting them, and says what to request next.
// Every key must lie below Prefix (else ErrListing). A key listed before is
// dropped; a new key is kept even when it comes out of byte order (some
// servers walk directories instead of sorting keys), so nothing listed is
// ever lost. A page is a problem when it is marked truncated without a
// continuation token, brings the token of the previous page again, brings
// only keys listed before (a repeated page: the token was ignored), or is
// one empty truncated page too many (MaxEmptyPages). After a problem the
// listing falls back to asking for the keys after the greatest one seen
// (S3 start-after, GCS startOffset) and keeps doing so; a page in that mode
// that is truncated but brings no new key fails with ErrListing naming the
// provider behaviour.
//
// Every request brings at least one new key, ends the listing, or is one of
// at most MaxEmptyPages empty pages in a row, so a listing ends after at
// most (keys + 2) × (MaxEmptyPages + 1) requests; what it holds is the set
// of keys listed, the same number as the entries the caller keeps. Use:
// call Request for the next request's parameters, Key for each key of the
// answer in order, then EndPage; repeat while EndPage says more.
type Listing struct {
	// Provider names the API for errors, e.g. "S3 ListObjectsV2".
	Provider string
	// Where names the listed prefix for errors, e.g. "s3://bucket/prefix/".
	Where string
	// Prefix is the requested key prefix; every key must start with it.
	Prefix string

	seen      map[string]struct{}
	last      string // greatest key seen
	token     string // continuation token for the next request
	after     bool   // fell back to start-after mode
	why       string // the behaviour that caused the fallback
	pageNew   int    // new keys in the current page
	pageStale int    // keys of the current page listed before
	empty     int    // empty pages in a row
}

// MaxEmptyPages is how many empty pages with a new continuation token in a
// row a listing accepts before it takes them as a provider fault.
const MaxEmptyPages = 32

// Request returns the parameters of the next request: a continuation token
// (empty for the first page) or, after a fallback, startAfter (the greatest
// key seen; useStartAfter is true then and token empty). A server whose
// start-after is inclusive (GCS startOffset) sends that key again, which is
// dropped as listed before.
func (l *Listing) Request() (token, startAfter string, useStartAfter bool) {
	if l.after {
		return "", l.last, true
	}
	return l.token, "", false
}

// Key checks the next key of the current page and reports whether it is new
// (keep it) or was listed before (drop it). A key outside Prefix fails.
func (l *Listing) Key(key string) (bool, error) {
	if !strings.HasPrefix(key, l.Prefix) {
		return false, fmt.Errorf("%w: %s of %s: the server answered with key %q outside the requested prefix %q (a provider ignoring the prefix parameter)",
			ErrListing, l.Provider, l.Where, key, l.Prefix)
	}
	if _, dup := l.seen[key]; dup {
		l.pageStale++
		return false, nil
	}
	if l.seen == nil {
		l.seen = map[string]struct{}{}
	}
	l.seen[key] = struct{}{}
	if key > l.last {
		l.last = key
	}
	l.pageNew++
	return true, nil
}

// EndPage ends the current page: truncated is the server's "more to come"
// (S3 IsTruncated; GCS: a next page token is present) and next the
// continuation token it gave. It reports whether another request is needed,
// or fails with ErrListing when the listing cannot be completed.
func (l *Listing) EndPage(truncated bool, next string) (more bool, err error) {
	fresh, stale := l.pageNew, l.pageStale
	l.pageNew, l.pageStale = 0, 0
	if l.after {
		switch {
		case !truncated:
			return false, nil
		case fresh == 0 && stale > 0:
			return false, l.fail(fmt.Sprintf("a page of keys already listed for start-after=%q", l.last))
		case fresh == 0:
			return false, l.fail(fmt.Sprintf("an empty page marked truncated for start-after=%q", l.last))
		}
		return true, nil
	}
	var problem string
	switch {
	case fresh == 0 && stale > 0:
		problem = fmt.Sprintf("a page repeating %d key(s) already listed (the continuation token ignored)", stale)
	case !truncated:
		return false, nil
	case next == "":
		problem = "a page marked truncated without a continuation token"
	case next == l.token:
		problem = "the same continuation token again"
	case fresh == 0 && l.empty >= MaxEmptyPages:
		problem = fmt.Sprintf("%d empty pages in a row marked truncated", l.empty+1)
	}
	if problem == "" {
		// Servers may answer empty pages with a new token (GCS says so);
		// a run of them is bounded by MaxEmptyPages.
		if fresh == 0 {
			l.empty++
		} else {
			l.empty = 0
		}
		l.token = next
		return true, nil
	}
	if len(l.seen) == 0 {
		return false, l.fail(problem)
	}
	l.after, l.why, l.token = true, problem, ""
	return true, nil
}

func (l *Listing) fail(problem string) error {
	msg := fmt.Sprintf("%s of %s: the server answered with %s", l.Provider, l.Where, problem)
	if l.why != "" {
		msg += fmt.Sprintf(" after falling back to start-after because of %s", l.why)
	}
	return fmt.Errorf("%w: %s; a partial listing is never used (see docs/BUCKETS.md, troubleshooting)", ErrListing, msg)
}
