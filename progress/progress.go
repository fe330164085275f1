// Package progress reports how far a long run has got on a writer (stderr):
// a bar (bytes done of the total in IEC units, rate, ETA) or a line every
// interval in the form PBS 4.2.3 logs. The work only counts its bytes; the
// reporter polls the count. It knows nothing of PBS, stores or archives:
// the caller names the work and, if it wants, adds a note (what is being
// retried) to each line.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Modes a Reporter shows progress in (Auto is decided by the caller, who
// knows whether the writer is a terminal).
const (
	Auto  = "auto"  // a bar on a terminal, lines otherwise
	Bar   = "bar"   // a bar, even without a terminal
	Lines = "lines" // a line every interval, as PBS 4.2.3 logs
	None  = "none"  // nothing
)

// Reporter shows a run's progress on a writer while it goes on, until
// Done.
type Reporter struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// Start polls current() (bytes done) against total bytes and shows it on w
// in mode (Bar or Lines; None or any other mode shows nothing): a bar
// described by desc, or "DESC: progress …" lines every interval (which
// must be positive for Lines). note, when not nil, says something to add
// (a request being retried): in the bar's description in parentheses, or
// as a "DESC: NOTE" line after each progress line; "" adds nothing. desc
// is printed as it is: the caller escapes it.
func Start(w io.Writer, mode string, interval time.Duration, desc string, total int64, current func() int64, note func() string) *Reporter {
	p := &Reporter{stop: make(chan struct{})}
	switch mode {
	case Bar:
		p.startBar(w, desc, total, current, note)
	case Lines:
		t := time.NewTicker(interval)
		p.wg.Go(func() {
			defer t.Stop()
			LineLoop(w, desc, total, current, time.Now(), t.C, time.Now, p.stop, note)
		})
	}
	return p
}

// Notes prints "DESC: NOTE" every interval (positive) while note() says
// something ("" prints nothing), until the returned stop is called (more
// than once is fine): for work that has no byte count yet but may wait
// (a request being retried), so that it does not look hung.
func Notes(w io.Writer, interval time.Duration, desc string, note func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	t := time.NewTicker(interval)
	wg.Go(func() {
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if n := note(); n != "" {
					fmt.Fprintf(w, "%s: %s\n", desc, n)
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

func (p *Reporter) startBar(w io.Writer, desc string, total int64, current func() int64, note func() string) {
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
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
				if note != nil {
					if n := note(); n != "" {
						d += " (" + n + ")"
					}
				}
				p.bar.Describe(d)
				p.bar.Set64(current())
			}
		}
	})
}

// LineLoop prints a progress line (Line) on each tick until stop is
// closed, and after it the line of note when note says something (a
// request being retried; nil: nothing); now gives the time of a tick and
// start the time the work began.
func LineLoop(w io.Writer, desc string, total int64, current func() int64, start time.Time, tick <-chan time.Time, now func() time.Time, stop <-chan struct{}, note func() string) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
			fmt.Fprintf(w, "%s: %s\n", desc, Line(current(), total, now().Sub(start)))
			if note != nil {
				if n := note(); n != "" {
					fmt.Fprintf(w, "%s: %s\n", desc, n)
				}
			}
		}
	}
}

// Line is PBS 4.2.3's periodic progress form for done of total bytes after
// elapsed: "progress 60% (6 GiB of 10 GiB in 1m, 102.4 MiB/s)". A zero
// total is 100%.
func Line(done, total int64, elapsed time.Duration) string {
	pct := 100
	if total > 0 {
		pct = int(min(done, total) * 100 / total)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	return fmt.Sprintf("progress %d%% (%s of %s in %s, %s/s)", pct, IECSize(float64(done)), IECSize(float64(total)), ShortDuration(elapsed), IECSize(rate))
}

// IECSize formats n bytes with an IEC unit and at most one decimal
// ("6 GiB", "102.4 MiB", "512 B").
func IECSize(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", n), ".0")
	return s + " " + units[i]
}

// ShortDuration formats d to the second as "45s", "1m", "1m 5s", "2h 3m".
func ShortDuration(d time.Duration) string {
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

// Done stops the bar or the lines; the bar is cleared.
func (p *Reporter) Done() {
	close(p.stop)
	p.wg.Wait()
	if p.bar != nil {
		p.bar.Finish()
	}
}
