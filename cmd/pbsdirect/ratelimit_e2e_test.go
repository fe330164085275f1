package main

// End-to-end tests of --rate, --burst and --rate-requests: the limits hold
// over a transfer from the test S3 server (bytes counted by the restore
// and requests by a proxy in front of the server, against the wall clock
// of the run), they hold for a datastore directory too and show in the
// progress and the reports (an interrupted run's JSON too), an interrupt
// ends a run waiting on them, and
// a value that does not parse is a usage error naming its flag.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// rateBucket backs data up with chunks of chunkKiB and serves the
// datastore from the test S3 server through a proxy counting requests; it
// returns the store arguments and the proxy.
func rateBucket(t *testing.T, data []byte, chunkKiB string) ([]string, *faultproxy.Proxy) {
	t.Helper()
	local := fixture.NewStore(t)
	backupImage(t, local, data, "--chunk-size", chunkKiB)
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "")
	p := bktProxy(t, s3.Endpoint, 0)
	return []string{"--store", "s3://bkt/ds", "--bucket-layout", "plain", "--s3-endpoint", p.URL}, p
}

// within fails the test unless got is within 10 % of want.
func within(t *testing.T, what string, got, want float64) {
	t.Helper()
	if r := got / want; r < 0.9 || r > 1.1 {
		t.Errorf("%s: %.4g, %.1f%% of the limit %.4g; want within 10%%", what, got, 100*r, want)
	} else {
		t.Logf("%s: %.4g, %.1f%% of the limit %.4g", what, got, 100*r, want)
	}
}

// TestRateLimitHolds restores a 40 MiB image from the test S3 server with
// --rate 4MiB/s: the chunk bytes the restore fetched over the wall time of
// the whole run (about 10 s) are within 10 % of the rate, and the report
// says the limit and the time waited on it.
func TestRateLimitHolds(t *testing.T) {
	fixture.SkipIfShort(t)
	const rate = 4 << 20
	data := fixture.Build(91, fixture.Region{Kind: fixture.Random, Len: 40 << 20})
	storeArgs, _ := rateBucket(t, data, "1024")
	target := filepath.Join(t.TempDir(), "disk.raw")
	start := time.Now()
	sum := restoreJSON(t, append(storeArgs, "--rate", "4MiB/s", snap0, "drive-scsi0", target)...)
	elapsed := time.Since(start)
	fixture.Equal(t, target, data)
	within(t, "bytes fetched per second", float64(sum.FetchedBytes)/elapsed.Seconds(), rate)
	rl := sum.RateLimit
	if rl == nil {
		t.Fatalf("the report has no rate-limit: %+v", sum)
	}
	if rl.BytesPerSecond != rate || rl.Burst != rate || rl.Bytes < int64(sum.FetchedBytes) || rl.WaitSeconds <= 0 {
		t.Errorf("rate-limit report %+v; want %d bytes/s, burst %d, at least the %d bytes fetched, some wait", *rl, rate, rate, sum.FetchedBytes)
	}
}

// TestRateRequestsHolds verifies a snapshot of 120 chunks from the test S3
// server with --rate-requests 25: the requests the server received (counted
// by a proxy) over the wall time of the run (about 5 s) are within 10 % of
// the limit.
func TestRateRequestsHolds(t *testing.T) {
	fixture.SkipIfShort(t)
	const perSecond = 25
	data := fixture.Build(92, fixture.Region{Kind: fixture.Random, Len: 120 << 17})
	storeArgs, p := rateBucket(t, data, "128")
	before := p.Requests()
	start := time.Now()
	r := mustOK(t, append([]string{"verify", "--output-format", "json", "--rate-requests", "25/s"}, append(storeArgs, snap0)...)...)
	elapsed := time.Since(start)
	n := p.Requests() - before
	if n < 120 {
		t.Fatalf("the server received %d requests, want at least one per chunk (120)", n)
	}
	within(t, "requests per second", float64(n)/elapsed.Seconds(), perSecond)
	var rep struct {
		RateLimit struct {
			RequestsPerSecond float64 `json:"requests-per-second"`
			Requests          int64   `json:"requests"`
		} `json:"rate-limit"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	if rep.RateLimit.RequestsPerSecond != perSecond || rep.RateLimit.Requests < 120 {
		t.Errorf("rate-limit report %+v; want %d requests/s, at least 120 requests", rep.RateLimit, perSecond)
	}
}

// TestRateLimitDirectory restores from a datastore directory with a rate
// and a burst smaller than a chunk: the reads wait (in pieces), every byte
// arrives, and the limit shows in the progress lines and in the text and
// JSON reports.
func TestRateLimitDirectory(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(93, fixture.Region{Kind: fixture.Random, Len: 3 << 20})
	local := fixture.NewStore(t)
	backupImage(t, local, data, "--chunk-size", "256")
	args := []string{"restore", "--store", local, "--rate", "2MiB", "--burst", "64KiB", "--progress", "lines", "--progress-interval", "200ms"}
	target := filepath.Join(t.TempDir(), "disk.raw")
	r := mustOK(t, append(args, snap0, "drive-scsi0", target)...)
	fixture.Equal(t, target, data)
	for _, w := range []string{"rate limit: 2 MiB/s (burst 64 KiB)", "waited"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("the report lacks %q: %v", w, r)
		}
	}
	if !strings.Contains(r.err, "restore: rate limit 2 MiB/s (burst 64 KiB), waited") {
		t.Errorf("the progress does not say the limit: %v", r)
	}
	target = filepath.Join(t.TempDir(), "disk.raw")
	sum := restoreJSON(t, "--store", local, "--rate", "2MiB", "--burst", "64KiB", snap0, "drive-scsi0", target)
	fixture.Equal(t, target, data)
	// 3 MiB at 2 MiB/s from an empty bucket: about 1.5 s of waits.
	if rl := sum.RateLimit; rl == nil || rl.BytesPerSecond != 2<<20 || rl.Burst != 64<<10 || rl.Bytes < int64(sum.FetchedBytes) || rl.WaitSeconds < 0.5 {
		t.Errorf("rate-limit report %+v of %d bytes fetched", rl, sum.FetchedBytes)
	}
}

// TestRateLimitInterrupt: SIGINT ends a restore, drill or verify waiting
// on --rate at once (the real process, signalled), with exit 130, from a
// datastore directory and from a bucket; its JSON has the rate-limit
// object (at the top level), counting only the bytes granted: about a
// second's worth, not the chunk being read.
func TestRateLimitInterrupt(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(94, fixture.Region{Kind: fixture.Random, Len: 4 << 20})
	local := fixture.NewStore(t)
	backupImage(t, local, data)
	bucketArgs, _ := rateBucket(t, data, "4096")
	for _, c := range []struct {
		cmd      string
		withArgs func(dir string) []string
	}{
		{"restore", func(dir string) []string { return []string{snap0, "drive-scsi0", filepath.Join(dir, "disk.raw")} }},
		{"drill", func(dir string) []string { return []string{snap0, "drive-scsi0", filepath.Join(dir, "disk.raw")} }},
		{"verify", func(string) []string { return []string{snap0} }},
	} {
		for name, storeArgs := range map[string][]string{"directory": {"--store", local}, "bucket": bucketArgs} {
			t.Run(c.cmd+"-"+name, func(t *testing.T) {
				stdout, _ := rateInterrupted(t, append(append([]string{c.cmd, "--rate", "64KiB", "--output-format", "json"}, storeArgs...), c.withArgs(t.TempDir())...))
				// The interrupted run's JSON says the limit too.
				var rep struct {
					ExitCode  int `json:"exit-code"`
					RateLimit *struct {
						BytesPerSecond int64 `json:"bytes-per-second"`
						Bytes          int64 `json:"bytes"`
					} `json:"rate-limit"`
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.ExitCode != 130 || rep.RateLimit == nil || rep.RateLimit.BytesPerSecond != 64<<10 {
					t.Errorf("JSON of the interrupted run %q (%v): want exit-code 130 and the rate-limit object", stdout, err)
				} else if rep.RateLimit.Bytes >= 1<<20 {
					// Generous: about 64 KiB were granted in the second.
					t.Errorf("the interrupted run counts %d bytes through the limit, want only those granted (< 1 MiB of the 4 MiB chunk)", rep.RateLimit.Bytes)
				}
			})
		}
	}
	// In text, an interrupted drill says the limit, and an interrupted
	// verify says "interrupted", not FAILED with "context canceled".
	t.Run("drill-text", func(t *testing.T) {
		stdout, stderr := rateInterrupted(t, []string{"drill", "--rate", "64KiB", "--store", local, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "disk.raw")})
		if !strings.Contains(stdout, "rate limit: 64 KiB/s") {
			t.Errorf("the interrupted drill's text does not say the limit:\n%s\n%s", stdout, stderr)
		}
	})
	t.Run("verify-text", func(t *testing.T) {
		stdout, stderr := rateInterrupted(t, []string{"verify", "--rate", "64KiB", "--store", local, snap0})
		if !strings.Contains(stdout, ": interrupted") || strings.Contains(stdout+stderr, "FAILED") || strings.Contains(stdout+stderr, "context canceled") {
			t.Errorf("the interrupted verify's text reads as damage:\n%s\n%s", stdout, stderr)
		}
	})
}

// rateInterrupted runs pbsdirect args (a run of a minute or more at its
// --rate 64KiB), interrupts it after a second, checks that it exits 130,
// and returns its stdout and stderr.
func rateInterrupted(t *testing.T, args []string) (string, string) {
	t.Helper()
	// 4 MiB at 64 KiB/s: a minute.
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCLI+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("after SIGINT: %v, want exit 130; stderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running 20 s after SIGINT; stderr: %s", stderr.String())
	}
	return stdout.String(), stderr.String()
}

// TestRateFlagsUsage: a rate, burst or request rate that does not parse
// is a usage error (exit 2) naming its flag, for each command taking them.
func TestRateFlagsUsage(t *testing.T) {
	store := fixture.NewStore(t)
	target := filepath.Join(t.TempDir(), "disk.raw")
	cmds := map[string][]string{
		"restore":       {"restore", "--store", store, snap0, "drive-scsi0", target},
		"restore-guest": {"restore-guest", "--store", store, snap0, t.TempDir()},
		"drill":         {"drill", "--store", store, snap0, "drive-scsi0", target},
		"verify":        {"verify", "--store", store, snap0},
		"mount":         {"mount", "--store", store, snap0, t.TempDir()},
		"serve-nbd":     {"serve-nbd", "--store", store, snap0},
	}
	for _, c := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--rate", "10X"}, []string{"--rate", "unknown unit"}},
		{[]string{"--rate", "0"}, []string{"--rate", "at least 1 byte"}},
		{[]string{"--rate", "fast"}, []string{"--rate", "want a number"}},
		{[]string{"--rate", "1M", "--burst", "1M/s"}, []string{"--burst", "unknown unit"}},
		{[]string{"--burst", "1M"}, []string{"--burst", "give --rate too"}},
		{[]string{"--rate-requests", "-3"}, []string{"--rate-requests", "more than 0"}},
		{[]string{"--rate-requests", "10/min"}, []string{"--rate-requests", "want a number"}},
		{[]string{"--rate", ""}, []string{"--rate is empty"}},
		{[]string{"--rate=", "--burst", "1M"}, []string{"--rate is empty"}},
		{[]string{"--rate-requests", " "}, []string{"--rate-requests is empty"}},
		{[]string{"--rate", "1000000TiB"}, []string{"--rate", "1PiB/s"}},
		{[]string{"--rate", "1e3"}, []string{"--rate", "without an exponent"}},
	} {
		for name, args := range cmds {
			t.Run(name+strings.Join(c.flags, "_"), func(t *testing.T) {
				full := append([]string{args[0]}, c.flags...)
				mustFail(t, exitUsage, c.want, append(full, args[1:]...)...)
			})
		}
	}
}

// TestRateLowWarns: a --rate below 64 KiB/s runs, with a warning on
// stderr saying the rate in force, and, for a number without a unit (most
// likely a unit left out: a plain number is bytes), the likely meaning; a
// usual rate has no warning.
func TestRateLowWarns(t *testing.T) {
	data := fixture.Build(95, fixture.Region{Kind: fixture.Random, Len: 8 << 10})
	local := fixture.NewStore(t)
	backupImage(t, local, data)
	for _, c := range []struct {
		rate, warning string // "": none
	}{
		{"60000", `--rate "60000" is 60000 bytes/s (58.6 KiB/s; a number without a unit is bytes): did you mean 60000MiB?`},
		{"50K/s", `--rate "50K/s" is only 48.8 KiB/s (50000 bytes/s)`},
		{"60KiB", `--rate "60KiB" is only 60 KiB/s (61440 bytes/s)`},
		{"60000/s", `--rate "60000/s" is 60000 bytes/s (58.6 KiB/s; a number without a unit is bytes): did you mean 60000MiB?`},
		{"1MiB", ""},
		{"65536", ""},
	} {
		t.Run(c.rate, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "disk.raw")
			r := mustOK(t, "restore", "--store", local, "--rate", c.rate, snap0, "drive-scsi0", target)
			fixture.Equal(t, target, data)
			if got := strings.Contains(r.err, "warning: --rate"); got != (c.warning != "") || !strings.Contains(r.err, c.warning) {
				t.Errorf("stderr %q; want the warning %q", r.err, c.warning)
			}
			// The advice on units only where none was given.
			if unit := strings.ContainsAny(strings.TrimSuffix(c.rate, "/s"), "KMGTBiK"); unit && strings.Contains(r.err, "did you mean") {
				t.Errorf("stderr %q: a unit was given, want no advice on units", r.err)
			}
		})
	}
}

// TestRateLimitChunksInTurn: under --rate, a restore from a bucket with
// its 32 fetchers completes chunks one after another rather than all of
// them together at the end, so that SIGINT part-way keeps the chunks done
// (durable, for --resume). 8 chunks of 256 KiB at 512 KiB/s: interrupted
// after 3 s (6 chunks' time), when shared evenly none would be done.
func TestRateLimitChunksInTurn(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(96, fixture.Region{Kind: fixture.Random, Len: 2 << 20})
	bucketArgs, _ := rateBucket(t, data, "256")
	args := append(append([]string{"restore", "--rate", "512KiB", "--output-format", "json"}, bucketArgs...), snap0, "drive-scsi0", filepath.Join(t.TempDir(), "disk.raw"))
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCLI+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	var rep struct {
		ExitCode int    `json:"exit-code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.ExitCode != 130 {
		t.Fatalf("JSON %q (%v), want exit-code 130; stderr %s", stdout.String(), err, stderr.String())
	}
	var kept, all int
	if i := strings.Index(rep.Error, " chunks are durable"); i < 0 {
		if !strings.Contains(rep.Error, "before any chunk was made durable") {
			t.Fatalf("error %q does not say the chunks kept", rep.Error)
		}
	} else if _, err := fmt.Sscanf(rep.Error[strings.LastIndex(rep.Error[:i], ": ")+2:], "%d of %d", &kept, &all); err != nil {
		t.Fatalf("error %q: %v", rep.Error, err)
	}
	t.Logf("interrupted after 3 s: %d of %d chunks durable", kept, all)
	if kept < 2 {
		t.Errorf("%d of %d chunks durable after 3 s at 512 KiB/s (chunks of 256 KiB): want them done one after another", kept, all)
	}
}
