package main

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws a byte progress bar on stderr while a run goes on, only
// when stderr is a terminal and the output is not JSON.
type progress struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// startProgress polls current() (bytes done) every 150 ms against total bytes.
func startProgress(stderr io.Writer, enabled bool, desc string, total int64, current func() int64) *progress {
	p := &progress{stop: make(chan struct{})}
	if !enabled || !isTerminal(stderr) {
		return p
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
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
				p.bar.Set64(current())
			}
		}
	})
	return p
}

// done stops the bar and clears it.
func (p *progress) done() {
	close(p.stop)
	p.wg.Wait()
	if p.bar != nil {
		p.bar.Finish()
	}
}
