package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// procResult is the outcome of pbsdirect run as its own process.
type procResult struct {
	result
	maxRSS int64 // peak resident set size in bytes
}

// pbsProcess runs pbsdirect with args as a separate process (the test
// binary re-executed) with the extra environment env, for what an in-process
// run cannot show: peak memory, and a process's own environment.
func pbsProcess(t *testing.T, env []string, args ...string) procResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), runAsCLI+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("pbsdirect %s: %v", strings.Join(args, " "), err)
	}
	r := procResult{result: result{code: cmd.ProcessState.ExitCode(), out: out.String(), err: errb.String(), args: args}}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	return r
}
