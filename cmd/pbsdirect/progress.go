package main

import (
	"io"
	"time"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/progress"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// Progress modes of --progress.
const (
	progressAuto  = progress.Auto  // a bar on a terminal, lines otherwise
	progressBar   = progress.Bar   // a bar, even without a terminal
	progressLines = progress.Lines // a line every --progress-interval, as PBS 4.2.3 logs
	progressNone  = progress.None
)

// progressFlags are --progress and --progress-interval.
type progressFlags struct {
	mode     string
	interval time.Duration
}

func (p *progressFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.mode, "progress", progressAuto, "progress on stderr: auto (a bar on a terminal, else a line every --progress-interval), bar, lines or none")
	fs.DurationVar(&p.interval, "progress-interval", 10*time.Second, "time between progress lines (--progress lines, or auto without a terminal)")
}

// check refuses an unknown mode or a non-positive interval (usage errors).
func (p *progressFlags) check() error {
	switch p.mode {
	case progressAuto, progressBar, progressLines, progressNone:
	default:
		return usagef("--progress must be auto, bar, lines or none, not %q", p.mode)
	}
	if p.interval <= 0 {
		return usagef("--progress-interval must be positive, not %v", p.interval)
	}
	return nil
}

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

// progressMode is pf's mode with auto decided for stderr.
func progressMode(stderr io.Writer, pf progressFlags) string {
	if pf.mode == progressAuto {
		if cli.IsTerminal(stderr) {
			return progressBar
		}
		return progressLines
	}
	return pf.mode
}

// startProgressWatch is startProgress that also says which bucket request
// watch shows being retried, why and until when: a line after each
// progress line, or in the bar's description (nil watch: nothing).
func startProgressWatch(stderr io.Writer, pf progressFlags, desc string, total int64, current func() int64, watch *bucket.RetryWatch) progressReport {
	return progressReport{progress.Start(stderr, progressMode(stderr, pf), pf.interval, index.DisplayText(desc), total, current, retryNote(watch))}
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
	if progressMode(stderr, pf) == progressNone {
		return func() {}
	}
	return progress.Notes(stderr, pf.interval, index.DisplayText(desc), retryNote(watch))
}
