package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/progress"
)

// rateFlags are --rate, --burst and --rate-requests: the limits of what a
// command reading chunks takes from its stores (ratelimit). check builds
// the limiter every store of the run shares.
type rateFlags struct {
	registered bool
	fs         *flag.FlagSet // where they are registered, for Changed
	rate       string
	burst      string
	requests   string
	// limiter is what the flags set (check); nil: no limit.
	limiter *ratelimit.Limiter
	// warning, when not empty, is what check found suspect in the flags,
	// for warn.
	warning string
}

// lowRate is the byte rate below which --rate is likely a unit left out.
const lowRate = 64 << 10

// register adds --rate, --burst and --rate-requests to fs.
func (r *rateFlags) register(fs *flag.FlagSet) {
	r.registered = true
	r.fs = fs
	fs.StringVar(&r.rate, "rate", "", "limit the bytes read from the stores to this rate, shared by every store and fetcher, e.g. 200MiB/s or 50M (as proxmox-backup-client's --rate: K, M, G, T are powers of 1000; KiB, MiB, GiB, TiB powers of 1024, which is what rclone's --bwlimit means by M; \"/s\" is optional) (default: no limit)")
	fs.StringVar(&r.burst, "burst", "", "bytes that may be read at once above --rate after a pause, e.g. 16MiB; a read larger than that waits in pieces; at least 32KiB, at most 2GiB (default: one second of --rate, as proxmox-backup-client)")
	fs.StringVar(&r.requests, "rate-requests", "", "limit the requests to the stores (GETs, HEADs and listings of a bucket; chunks and files opened in a directory) to N per second, e.g. 100 or 0.5/s, as rclone's --tpslimit (default: no limit)")
}

// check parses the flags into limiter; a value that does not parse is a
// usage error naming its flag.
func (r *rateFlags) check() error {
	if !r.registered {
		return nil
	}
	for _, name := range []string{"rate", "burst", "rate-requests"} {
		if f := r.fs.Lookup(name); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
			return usagef("--%s is empty: give a value, or leave the flag out for no limit", name)
		}
	}
	var l ratelimit.Limits
	var err error
	if r.rate != "" {
		if l.BytesPerSecond, err = ratelimit.ParseSize(r.rate, true); err != nil {
			return usagef("--rate %v", err)
		}
		if l.BytesPerSecond < lowRate {
			num := strings.TrimRight(strings.TrimSpace(r.rate), "/sSbBiIkKmMgGtTpP ")
			if strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(r.rate), "/s")) == num {
				// No unit: most likely one left out.
				r.warning = fmt.Sprintf("pbsdirect: warning: --rate %s is %d bytes/s (%s/s; a number without a unit is bytes): did you mean %sMiB?",
					strconv.Quote(r.rate), l.BytesPerSecond, progress.IECSize(float64(l.BytesPerSecond)), num)
			} else {
				r.warning = fmt.Sprintf("pbsdirect: warning: --rate %s is only %s/s (%d bytes/s)",
					strconv.Quote(r.rate), progress.IECSize(float64(l.BytesPerSecond)), l.BytesPerSecond)
			}
		}
	}
	if r.burst != "" {
		if r.rate == "" {
			return usagef("--burst %q: give --rate too (--burst is the bytes above it)", r.burst)
		}
		if l.Burst, err = ratelimit.ParseSize(r.burst, false); err != nil {
			return usagef("--burst %v", err)
		}
	}
	if r.requests != "" {
		if l.RequestsPerSecond, err = ratelimit.ParseRequestRate(r.requests); err != nil {
			return usagef("--rate-requests %v", err)
		}
	}
	if r.limiter, err = ratelimit.New(l); err != nil {
		return usagef("--rate %q: %v", r.rate, err) // the flags are checked above but for the rate's ceiling
	}
	return nil
}

// warn writes on stderr what check found suspect in the flags, if
// anything (a --rate below 64 KiB/s).
func (r *rateFlags) warn(stderr io.Writer) {
	if r.warning != "" {
		fmt.Fprintln(stderr, r.warning)
	}
}

// limitNote returns what lim held back so far for a progress line: "rate
// limit 200 MiB/s (burst 200 MiB), waited 3s"; "" for no limit.
func limitNote(lim *ratelimit.Limiter) func() string {
	return func() string {
		if lim == nil {
			return ""
		}
		return "rate limit " + limitsText(lim.Limits()) + ", waited " + progress.ShortDuration(lim.Waited())
	}
}

// joinNotes returns a note saying what each of notes says, "; " between.
func joinNotes(notes ...func() string) func() string {
	return func() string {
		var say []string
		for _, n := range notes {
			if s := n(); s != "" {
				say = append(say, s)
			}
		}
		return strings.Join(say, "; ")
	}
}

// writeLimitLine writes the text report's line on the rate limits of rep,
// indented by indent: nothing for no limit.
func writeLimitLine(w io.Writer, indent string, rep *ratelimit.Report) {
	if rep == nil {
		return
	}
	l := ratelimit.Limits{BytesPerSecond: rep.BytesPerSecond, Burst: rep.Burst, RequestsPerSecond: rep.RequestsPerSecond}
	fmt.Fprintf(w, "%srate limit: %s; %s in %d requests, waited %.1fs on the limit\n", indent, limitsText(l), progress.IECSize(float64(rep.Bytes)), rep.Requests, rep.WaitSeconds)
}

// limitsText describes l for people: "200 MiB/s (burst 200 MiB), 10
// requests/s"; "none" when nothing is limited.
func limitsText(l ratelimit.Limits) string {
	var parts []string
	if l.BytesPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("%s/s (burst %s)", progress.IECSize(float64(l.BytesPerSecond)), progress.IECSize(float64(l.Burst))))
	}
	if l.RequestsPerSecond > 0 {
		parts = append(parts, strconv.FormatFloat(l.RequestsPerSecond, 'f', -1, 64)+" requests/s")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// limitOnFailure gives a failed or interrupted run's JSON result (stdout
// through cli.Run in a JSON format) the "rate-limit" object of lim, as a
// successful run's report has it; it does nothing in text, for no limit,
// or when the command already gave its result. It returns the encoding
// error.
func limitOnFailure(stdout io.Writer, lim *ratelimit.Limiter) error {
	if lim == nil || !cli.IsJSON(stdout) || cli.HasJSONResult(stdout) {
		return nil
	}
	return cli.WriteJSON(stdout, struct {
		RateLimit *ratelimit.Report `json:"rate-limit"`
	}{lim.Report()})
}
