package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// peakRSSEnv names a file where the re-executed test binary writes its
// peak resident set size (VmHWM) when it ends. The wait status's maxrss
// cannot be used: with vfork, a child's maxrss starts at its parent's RSS
// (the whole test binary's) before exec.
const peakRSSEnv = "PBSDIRECT_TEST_PEAK_RSS_FILE"

// writePeakRSS writes this process's VmHWM in bytes to path.
func writePeakRSS(path string) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			if kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
				os.WriteFile(path, []byte(strconv.FormatInt(kib<<10, 10)), 0o644)
			}
		}
	}
}

// procResult is the outcome of pbsdirect run as its own process.
type procResult struct {
	result
	maxRSS int64 // peak resident set size in bytes
}

// pbsProc runs pbsdirect with args as a separate process (the test
// binary re-executed) with the extra environment env, for what an in-process
// run cannot show: peak memory, and a process's own environment.
func pbsProc(t *testing.T, env []string, args ...string) procResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	rss := filepath.Join(t.TempDir(), "peak-rss")
	cmd.Env = append(append(os.Environ(), runAsCLI+"=1", peakRSSEnv+"="+rss), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("pbsdirect %s: %v", strings.Join(args, " "), err)
	}
	r := procResult{result: result{code: cmd.ProcessState.ExitCode(), out: out.String(), err: errb.String(), args: args}}
	if b, err := os.ReadFile(rss); err == nil {
		r.maxRSS, _ = strconv.ParseInt(string(b), 10, 64)
	}
	return r
}
