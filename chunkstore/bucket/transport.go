package bucket

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// StallError is an attempt cut by the stall watchdog: no byte moved (sent or
// received, the wait for the response headers included) for the I/O
// timeout. It is retried.
type StallError struct {
	// After is the I/O timeout that elapsed.
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("no data for %v (--io-timeout): transfer stalled", e.After)
}

// Timeout reports true: a stall is a timeout (net.Error).
func (e *StallError) Timeout() bool { return true }

// Temporary reports true (net.Error).
func (e *StallError) Temporary() bool { return true }

// attemptKey is the context key of the *attempt a Policy passes down to the
// transport.
type attemptKey struct{}

// attempt is what the transport saw of one policy attempt: whether the
// watchdog cut it, and whether the server throttled it (429, 503) and asked
// to wait (Retry-After).
type attempt struct {
	stalled    atomic.Bool
	throttled  atomic.Bool
	retryAfter atomic.Int64 // nanoseconds; 0 when not given
	status     atomic.Int32 // the last error status (>= 400) answered; 0: none
	what       atomic.Pointer[string]
}

func attemptOf(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// Transport wraps an http.RoundTripper with the stall watchdog: a request is
// cut when, for IOTimeout, no byte of its body was sent and no byte of the
// response arrived (time to first byte included). A transfer that keeps
// moving is never cut, however long it takes. Responses 429 and 503 and
// their Retry-After header are noted for the Policy running the attempt.
type Transport struct {
	// Base does the requests.
	Base http.RoundTripper
	// IOTimeout is the longest time without progress; <= 0 disables the
	// watchdog.
	IOTimeout time.Duration
	// Stalls, when set, counts the requests the watchdog cut.
	Stalls *atomic.Int64
}

// RoundTrip runs req under the watchdog.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	att := attemptOf(req.Context())
	if att != nil {
		what := describeRequest(req)
		att.what.Store(&what)
	}
	if t.IOTimeout <= 0 {
		resp, err := t.Base.RoundTrip(req)
		if err == nil {
			noteThrottle(att, resp)
		}
		return resp, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	w := &watchdog{d: t.IOTimeout, cancel: cancel, att: att, stalls: t.Stalls}
	w.timer = time.AfterFunc(w.d, w.fire)
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &progressBody{rc: req.Body, w: w}
	}
	resp, err := t.Base.RoundTrip(req)
	if err != nil {
		w.stop()
		if w.fired.Load() {
			return nil, &StallError{After: w.d}
		}
		return nil, err
	}
	noteThrottle(att, resp)
	w.progress()
	resp.Body = &progressBody{rc: resp.Body, w: w, closeStops: true}
	return resp, nil
}

// noteThrottle records an error status in att, and a 429 or 503 answer's
// Retry-After.
func noteThrottle(att *attempt, resp *http.Response) {
	if att != nil && resp.StatusCode >= 400 {
		att.status.Store(int32(resp.StatusCode))
	}
	if att == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return
	}
	att.throttled.Store(true)
	if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		att.retryAfter.Store(int64(d))
	}
}

// ParseRetryAfter parses a Retry-After header value, delay-seconds or an
// HTTP date (RFC 9110 §10.2.3), into a wait from now. It returns false for
// an empty or malformed value.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 86400)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// watchdog cuts one request when its timer fires; progress re-arms it.
type watchdog struct {
	d       time.Duration
	cancel  context.CancelFunc
	att     *attempt
	stalls  *atomic.Int64
	timer   *time.Timer
	fired   atomic.Bool
	done    atomic.Bool
	stopped sync.Once
}

func (w *watchdog) fire() {
	if w.done.Load() {
		return
	}
	w.fired.Store(true)
	if w.stalls != nil {
		w.stalls.Add(1)
	}
	if w.att != nil {
		w.att.stalled.Store(true)
	}
	w.cancel()
}

func (w *watchdog) progress() {
	if !w.fired.Load() && !w.done.Load() {
		w.timer.Reset(w.d)
	}
}

func (w *watchdog) stop() {
	w.stopped.Do(func() {
		w.done.Store(true)
		w.timer.Stop()
		w.cancel()
	})
}

// progressBody re-arms the watchdog on every byte that moves; a read cut by
// the watchdog fails with a StallError.
type progressBody struct {
	rc         io.ReadCloser
	w          *watchdog
	closeStops bool // response body: Close ends the request
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.progress()
	}
	if err != nil && err != io.EOF && b.w.fired.Load() {
		err = &StallError{After: b.w.d}
	}
	return n, err
}

func (b *progressBody) Close() error {
	err := b.rc.Close()
	if b.closeStops {
		b.w.stop()
	}
	return err
}
