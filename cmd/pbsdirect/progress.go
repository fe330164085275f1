package main

import (
	"io"

	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/progress"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// progressFlags are --progress and --progress-interval (cli.ProgressFlags).
type progressFlags struct {
	cli.ProgressFlags
	// limit, when set, is said in the progress (the rate limits and the
	// time waited on them).
	limit *ratelimit.Limiter
}

// register adds --progress and --progress-interval to fs.
func (p *progressFlags) register(fs *flag.FlagSet) { p.Register(fs) }

// progressReport reports a run's bytes on stderr while it goes on
// (progress.Reporter); done stops it.
type progressReport struct{ r *progress.Reporter }

// done stops the bar or the lines; the bar is cleared.
func (p progressReport) done() { p.r.Done() }

// startProgress polls current() (bytes done: data written, zero ranges not
// counted) against total bytes. A zero-valued pf shows nothing. desc may
// name an archive of the store: it is escaped (index.DisplayText).
func startProgress(stderr io.Writer, pf progressFlags, desc string, total int64, current func() int64) progressReport {
	return startProgressWatch(stderr, pf, desc, total, current, nil)
}

// startProgressWatch is startProgress that also says which bucket request
// watch shows being retried, why and until when: a line after each
// progress line, or in the bar's description (nil watch: nothing).
func startProgressWatch(stderr io.Writer, pf progressFlags, desc string, total int64, current func() int64, watch *bucket.RetryWatch) progressReport {
	return progressReport{progress.Start(stderr, pf.ModeFor(stderr), pf.Interval, index.DisplayText(desc), total, current, joinNotes(retryNote(watch), limitNote(pf.limit)))}
}

// retryNote returns what watch shows being retried now, "retrying WHAT
// (CAUSE) until HH:MM:SS", or "" (also for a nil watch).
func retryNote(watch *bucket.RetryWatch) func() string {
	return func() string {
		if r, ok := watch.Retrying(); ok {
			return "retrying " + r.String()
		}
		return ""
	}
}

// startRetryLines prints "DESC: retrying …" (retryNote) every
// --progress-interval while a bucket request is being retried, until the
// returned stop is called (more than once is fine): for the work before a
// progress report starts (the store opened, the manifest and index read),
// so that a run waiting out --retry-for does not look hung. Nothing with
// --progress none.
func startRetryLines(stderr io.Writer, pf progressFlags, desc string, watch *bucket.RetryWatch) (stop func()) {
	if pf.ModeFor(stderr) == progress.None {
		return func() {}
	}
	return progress.Notes(stderr, pf.Interval, index.DisplayText(desc), retryNote(watch))
}
