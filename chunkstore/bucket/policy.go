package bucket

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
)

// Defaults of the request policy.
const (
	// DefaultIOTimeout is the longest time a transfer may move no byte,
	// the wait for the first response byte included (--io-timeout).
	DefaultIOTimeout = 30 * time.Second
	// DefaultRetryFor is how long one request may keep failing before the
	// store gives up on it (--retry-for).
	DefaultRetryFor = 10 * time.Minute
	// DefaultConcurrency is the most GETs in flight, the adaptive limit's
	// ceiling.
	DefaultConcurrency = 32
	// DefaultMinBackoff is the first retry delay; it doubles per retry of
	// the same request, with jitter, up to DefaultMaxBackoff.
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
	// decreaseGap is the least time between two halvings of the in-flight
	// limit: the answers to one burst of requests lower it once.
	decreaseGap = time.Second
)

// Options is the request policy of a bucket store, the same for S3 and GCS.
// Zero fields take the defaults above.
type Options struct {
	// IOTimeout is the longest time a request may move no byte (sent or
	// received, the wait for the response headers included) before it is
	// cut and retried. Negative disables the watchdog.
	IOTimeout time.Duration
	// RetryFor is how long the same request may keep failing (transient
	// errors, stalls, throttling) before the store gives up on it with an
	// error wrapping chunkstore.ErrUnavailable. Negative: no retries.
	RetryFor time.Duration
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts of one request when the server gives no Retry-After.
	MinBackoff, MaxBackoff time.Duration
	// Concurrency is the most GETs of chunks in flight: the ceiling of the
	// adaptive limit, which halves while the server throttles and grows
	// back by one per limit's worth of successes (AIMD).
	Concurrency int
	// Watch, when set, is told of every retry (RetryWatch); shared by the
	// policies of several stores.
	Watch *RetryWatch
	// Limit, when set, caps the requests and the bytes read of every
	// attempt (--rate, --burst, --rate-requests); shared by the policies
	// of several stores.
	Limit *ratelimit.Limiter
}

// WithDefaults returns o with zero fields set to the defaults.
func (o Options) WithDefaults() Options {
	if o.IOTimeout == 0 {
		o.IOTimeout = DefaultIOTimeout
	}
	if o.RetryFor == 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return o
}

// Stats counts what the policy did; every field is a running total except
// Limit and MinLimit.
type Stats struct {
	Retries        int64 `json:"retries"`         // attempts that followed a failed one
	Throttled      int64 `json:"throttled"`       // answers that asked to slow down (429, 503, rateLimitExceeded)
	Stalls         int64 `json:"stalls"`          // transfers cut by --io-timeout
	LimitDecreases int64 `json:"limit-decreases"` // halvings of the GETs in flight
	LimitIncreases int64 `json:"limit-increases"` // steps back up
	Limit          int   `json:"limit"`           // GETs allowed in flight now
	MinLimit       int   `json:"min-limit"`       // the lowest it went
}

// Add returns the sum of s and o; Limit and MinLimit add too, so that a
// chain's stats sum its members' limits.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Retries: s.Retries + o.Retries, Throttled: s.Throttled + o.Throttled, Stalls: s.Stalls + o.Stalls,
		LimitDecreases: s.LimitDecreases + o.LimitDecreases, LimitIncreases: s.LimitIncreases + o.LimitIncreases,
		Limit: s.Limit + o.Limit, MinLimit: s.MinLimit + o.MinLimit,
	}
}

// Class is what a failed attempt calls for.
type Class int

const (
	// Fatal errors are not retried: not found, refused, a bad request, an
	// endpoint that cannot be reached as configured.
	Fatal Class = iota
	// Transient errors are retried after a backoff: 5xx, resets, stalls.
	Transient
	// Throttle is the server asking to slow down: retried after its
	// Retry-After (or a backoff), and it lowers the GETs in flight.
	Throttle
)

// Policy drives the attempts of every request of one store. It is safe for
// concurrent use.
type Policy struct {
	opts    Options
	backoff Backoff
	lim     limiter

	retries, throttled, stalls atomic.Int64
	watch                      *RetryWatch
}

// NewPolicy returns the policy for o (defaults applied).
func NewPolicy(o Options) *Policy {
	o = o.WithDefaults()
	p := &Policy{opts: o, backoff: Backoff{Min: o.MinBackoff, Max: o.MaxBackoff}, watch: o.Watch}
	if p.watch == nil {
		p.watch = new(RetryWatch)
	}
	p.lim.init(o.Concurrency)
	return p
}

// Options returns the policy's options, defaults applied.
func (p *Policy) Options() Options { return p.opts }

// Transport returns base wrapped in the stall watchdog of the policy's
// IOTimeout and, outside it, the rate limits (Options.Limit): a request
// waits for its turn before the watchdog starts.
func (p *Policy) Transport(base http.RoundTripper) http.RoundTripper {
	return p.opts.Limit.Transport(&Transport{Base: base, IOTimeout: p.opts.IOTimeout, Stalls: &p.stalls})
}

// Stats returns the counts so far.
func (p *Policy) Stats() Stats {
	s := Stats{Retries: p.retries.Load(), Throttled: p.throttled.Load(), Stalls: p.stalls.Load()}
	s.LimitDecreases, s.LimitIncreases, s.Limit, s.MinLimit = p.lim.stats()
	return s
}

// Do runs fn until it succeeds, fails with a Fatal error, ctx ends, or the
// same request has kept failing for RetryFor. classify judges fn's errors;
// the transport's observations overrule it (a stall is Transient, a 429 or
// 503 is Throttle unless classify says Fatal). get marks chunk GETs, which
// wait for a slot of the adaptive in-flight limit. Giving up returns an
// error wrapping chunkstore.ErrUnavailable and the last attempt's error;
// Fatal errors and ctx's error are returned as they are.
func (p *Policy) Do(ctx context.Context, get bool, fn func(context.Context) error, classify func(error) Class) error {
	var firstFail time.Time
	var queued time.Duration // waits for a slot since firstFail: not failing
	defer func() {
		if !firstFail.IsZero() {
			p.watch.failing.Add(-1)
		}
	}()
	for n := 1; ; n++ {
		if get {
			t0 := time.Now()
			if err := p.lim.acquire(ctx); err != nil {
				return err
			}
			if !firstFail.IsZero() {
				queued += time.Since(t0)
			}
		}
		att := &attempt{}
		err := fn(context.WithValue(ctx, attemptKey{}, att))
		class := Fatal
		if err != nil && ctx.Err() == nil {
			class = classify(err)
			switch {
			case att.stalled.Load():
				class = Transient
			case att.throttled.Load() && class != Fatal:
				class = Throttle
			}
			if class == Throttle {
				p.throttled.Add(1)
			}
		}
		if get {
			p.lim.release(err == nil, class == Throttle)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if class == Fatal {
			return err
		}
		now := time.Now()
		if firstFail.IsZero() {
			firstFail = now
			p.watch.failing.Add(1)
		}
		delay := p.backoff.Delay(n)
		if ra := time.Duration(att.retryAfter.Load()); ra > 0 {
			delay = ra
		}
		// The same request keeps being tried for the whole of RetryFor: a
		// wait (backoff or Retry-After) that would end past it is cut so
		// that the last attempt comes at the deadline.
		failing := now.Sub(firstFail) - queued
		if left := p.opts.RetryFor - failing; left > 0 && delay > left {
			delay = left
		}
		if p.opts.RetryFor < 0 || failing >= p.opts.RetryFor {
			what := "failing"
			if class == Throttle {
				what = "throttled"
			}
			return fmt.Errorf("%w: still %s after %v and %d attempt(s) (--retry-for %v): %w",
				chunkstore.ErrUnavailable, what, failing.Round(time.Millisecond), n, max(p.opts.RetryFor, 0), err)
		}
		p.retries.Add(1)
		what := "request"
		if w := att.what.Load(); w != nil {
			what = *w
		}
		p.watch.note.Store(&Retrying{What: what, Cause: causeOf(att, err), Until: firstFail.Add(p.opts.RetryFor + queued)})
		if err := Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// MayRetry reports whether a request that has kept failing since since may
// be tried again (RetryFor not yet spent), for callers that resume a
// transfer themselves (see Pause).
func (p *Policy) MayRetry(since time.Time) bool {
	return p.opts.RetryFor >= 0 && time.Since(since) <= p.opts.RetryFor
}

// Pause counts a retry and waits the backoff before retry n (1 = first), or
// until ctx ends (returning its error).
func (p *Policy) Pause(ctx context.Context, n int) error {
	p.retries.Add(1)
	return Sleep(ctx, p.backoff.Delay(n))
}

// limiter is the adaptive limit on GETs in flight: additive increase (one
// more per limit successes), multiplicative decrease (halved on throttling,
// at most once per decreaseGap).
type limiter struct {
	mu           sync.Mutex
	ceiling      int
	limit        int
	minLimit     int
	inflight     int
	credit       int
	lastDecrease time.Time
	wake         chan struct{} // closed when a slot may have freed
	dec, inc     int64
}

func (l *limiter) init(ceiling int) {
	l.ceiling, l.limit, l.minLimit = ceiling, ceiling, ceiling
	l.wake = make(chan struct{})
}

func (l *limiter) acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.inflight < l.limit {
			l.inflight++
			l.mu.Unlock()
			return nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *limiter) release(ok, throttled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	switch {
	case throttled:
		l.credit = 0
		if now := time.Now(); l.limit > 1 && now.Sub(l.lastDecrease) >= decreaseGap {
			l.limit = max(1, l.limit/2)
			l.minLimit = min(l.minLimit, l.limit)
			l.lastDecrease = now
			l.dec++
		}
	case ok && l.limit < l.ceiling:
		l.credit++
		if l.credit >= l.limit {
			l.credit = 0
			l.limit++
			l.inc++
		}
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

func (l *limiter) stats() (dec, inc int64, limit, minLimit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dec, l.inc, l.limit, l.minLimit
}
