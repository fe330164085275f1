package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalHelperEnv makes the test binary run signalHelper: it prints
// "ready", waits for SignalContext's context to end, takes the time the
// variable gives to clean up, prints the cause and exits 130.
const signalHelperEnv = "PBSDIRECT_SIGNAL_HELPER_CLEANUP"

func TestMain(m *testing.M) {
	if d, err := time.ParseDuration(os.Getenv(signalHelperEnv)); err == nil {
		ctx, _ := SignalContext()
		fmt.Println("ready")
		<-ctx.Done()
		time.Sleep(d)
		fmt.Println("done:", context.Cause(ctx))
		os.Exit(130)
	}
	os.Exit(m.Run())
}

// TestSignalRepeat signals a real process that uses SignalContext: the
// same signal twice back to back (as coreutils timeout and a terminal's
// process group deliver it) is one interruption, and the run ends as it
// reports; the signal again after RepeatWindow ends it at once.
func TestSignalRepeat(t *testing.T) {
	for _, c := range []struct {
		name    string
		cleanup time.Duration
		gap     time.Duration // between the two signals
		sig     syscall.Signal
		killed  bool
	}{
		{"SIGINT twice at once", 500 * time.Millisecond, 0, syscall.SIGINT, false},
		{"SIGINT twice 100ms apart", 500 * time.Millisecond, 100 * time.Millisecond, syscall.SIGINT, false},
		{"SIGTERM twice 100ms apart", 500 * time.Millisecond, 100 * time.Millisecond, syscall.SIGTERM, false},
		{"SIGINT again later", 30 * time.Second, RepeatWindow + 500*time.Millisecond, syscall.SIGINT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), signalHelperEnv+"="+c.cleanup.String())
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				t.Fatalf("helper said %q, want ready", lines.Text())
			}
			cmd.Process.Signal(c.sig)
			time.Sleep(c.gap)
			cmd.Process.Signal(c.sig)
			var said strings.Builder
			for lines.Scan() {
				said.WriteString(lines.Text() + "\n")
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("helper ended with %v, want an exit status", err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if c.killed {
				if !ws.Signaled() || ws.Signal() != c.sig {
					t.Errorf("helper ended with %v (said %q), want killed by %v", err, said.String(), c.sig)
				}
				return
			}
			if ws.Signaled() || ws.ExitStatus() != 130 || !strings.Contains(said.String(), "done: interrupted") {
				t.Errorf("helper ended with %v, said %q; want it to finish (exit 130, \"done: interrupted\")", err, said.String())
			}
		})
	}
}
