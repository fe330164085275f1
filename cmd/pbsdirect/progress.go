package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/pbsdirect/pbsdirect/index"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
)

// Progress modes of --progress.
const (
	progressAuto  = "auto"  // a bar on a terminal, lines otherwise
	progressBar   = "bar"   // a bar, even without a terminal
	progressLines = "lines" // a line every --progress-interval, as PBS 4.2.3 logs
	progressNone  = "none"
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

// progress reports a run's bytes on stderr while it goes on: a bar
// (bytes done/total in IEC units, rate, ETA) or periodic lines. The engine
// only counts; progress polls.
type progress struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// startProgress polls current() (bytes done: data written, zero ranges not
// counted) against total bytes. A zero-valued pf shows nothing. desc may
// name an archive of the store: it is escaped (index.DisplayText).
func startProgress(stderr io.Writer, pf progressFlags, desc string, total int64, current func() int64) *progress {
	return startProgressWatch(stderr, pf, desc, total, current, nil)
}

// progressMode is pf's mode with auto decided for stderr.
func progressMode(stderr io.Writer, pf progressFlags) string {
	if pf.mode == progressAuto {
		if isTerminal(stderr) {
			return progressBar
		}
		return progressLines
	}
	return pf.mode
}

// startProgressWatch is startProgress that also says which bucket request
// watch shows being retried, why and until when: a line after each
// progress line, or in the bar's description (nil watch: nothing).
func startProgressWatch(stderr io.Writer, pf progressFlags, desc string, total int64, current func() int64, watch *bucket.RetryWatch) *progress {
	desc = index.DisplayText(desc)
	p := &progress{stop: make(chan struct{})}
	note := retryNote(watch)
	switch progressMode(stderr, pf) {
	case progressBar:
		p.startBar(stderr, desc, total, current, note)
	case progressLines:
		t := time.NewTicker(pf.interval)
		p.wg.Go(func() {
			defer t.Stop()
			lineLoop(stderr, desc, total, current, time.Now(), t.C, time.Now, p.stop, note)
		})
	}
	return p
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
	desc = index.DisplayText(desc)
	note := retryNote(watch)
	done := make(chan struct{})
	var wg sync.WaitGroup
	t := time.NewTicker(pf.interval)
	wg.Go(func() {
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if n := note(); n != "" {
					fmt.Fprintf(stderr, "%s: %s\n", desc, n)
				}
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

func (p *progress) startBar(stderr io.Writer, desc string, total int64, current func() int64, note func() string) {
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionShowCount(),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionClearOnFinish(),
	)
	p.wg.Go(func() {
		t := time.NewTicker(150 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				p.bar.Set64(current())
				return
			case <-t.C:
				d := desc
				if n := note(); n != "" {
					d += " (" + n + ")"
				}
				p.bar.Describe(d)
				p.bar.Set64(current())
			}
		}
	})
}

// lineLoop prints a progress line (progressLine) on each tick until stop
// is closed, and after it the line of note when note says something (a
// request being retried; nil: nothing); now gives the time of a tick.
func lineLoop(w io.Writer, desc string, total int64, current func() int64, start time.Time, tick <-chan time.Time, now func() time.Time, stop <-chan struct{}, note func() string) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
			fmt.Fprintf(w, "%s: %s\n", desc, progressLine(current(), total, now().Sub(start)))
			if note != nil {
				if n := note(); n != "" {
					fmt.Fprintf(w, "%s: %s\n", desc, n)
				}
			}
		}
	}
}

// progressLine is PBS 4.2.3's periodic progress form:
// "progress 60% (6 GiB of 10 GiB in 1m, 102.4 MiB/s)".
func progressLine(done, total int64, elapsed time.Duration) string {
	pct := 100
	if total > 0 {
		pct = int(min(done, total) * 100 / total)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	return fmt.Sprintf("progress %d%% (%s of %s in %s, %s/s)", pct, iecSize(float64(done)), iecSize(float64(total)), shortDuration(elapsed), iecSize(rate))
}

// iecSize formats n bytes with an IEC unit and at most one decimal
// ("6 GiB", "102.4 MiB", "512 B").
func iecSize(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", n), ".0")
	return s + " " + units[i]
}

// shortDuration formats d to the second as "45s", "1m", "1m 5s", "2h 3m".
func shortDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600 && s%60 == 0:
		return fmt.Sprintf("%dm", s/60)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s%3600/60 == 0:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dh %dm", s/3600, s%3600/60)
}

// done stops the bar or the lines; the bar is cleared.
func (p *progress) done() {
	close(p.stop)
	p.wg.Wait()
	if p.bar != nil {
		p.bar.Finish()
	}
}
