package cli

import (
	"io"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/progress"
)

// ProgressFlags are --progress and --progress-interval: how a run shows
// its progress on stderr.
type ProgressFlags struct {
	Mode     string        // progress.Auto, Bar, Lines or None; "" when not registered
	Interval time.Duration // between progress lines
}

// Register adds --progress and --progress-interval to fs.
func (p *ProgressFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&p.Mode, "progress", progress.Auto, "progress on stderr: auto (a bar on a terminal, else a line every --progress-interval), bar, lines or none")
	fs.DurationVar(&p.Interval, "progress-interval", 10*time.Second, "time between progress lines (--progress lines, or auto without a terminal)")
}

// Check refuses an unknown mode or a non-positive interval (usage errors).
func (p *ProgressFlags) Check() error {
	switch p.Mode {
	case progress.Auto, progress.Bar, progress.Lines, progress.None:
	default:
		return Usagef("--progress must be auto, bar, lines or none, not %q", p.Mode)
	}
	if p.Interval <= 0 {
		return Usagef("--progress-interval must be positive, not %v", p.Interval)
	}
	return nil
}

// ModeFor returns the mode with auto decided for stderr: a bar on a
// terminal, else lines.
func (p ProgressFlags) ModeFor(stderr io.Writer) string {
	if p.Mode == progress.Auto {
		if IsTerminal(stderr) {
			return progress.Bar
		}
		return progress.Lines
	}
	return p.Mode
}
