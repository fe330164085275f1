package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Exit codes of a run (see the package doc).
const (
	ExitOK      = 0
	ExitData    = 1 // the data is damaged or missing
	ExitUsage   = 2
	ExitOutside = 3 // a cause outside the data; retrying later can help
)

// UsageError marks errors that exit with code 2 (ExitUsage); it carries
// its message and, when it was made from one (UsageOf), its cause.
type UsageError struct {
	msg string
	err error
}

// Error returns the message.
func (e *UsageError) Error() string { return e.msg }

// Unwrap returns the cause, or nil.
func (e *UsageError) Unwrap() error { return e.err }

// UsageOf marks err as a usage mistake (exit 2), keeping its text and cause.
func UsageOf(err error) error { return &UsageError{msg: err.Error(), err: err} }

// Usagef returns a usage error (exit 2) with the formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// InterruptedError is the cause of a run's context when a signal stopped
// it (SignalContext); a run it ends exits with 128 + Sig.
type InterruptedError struct{ Sig syscall.Signal }

// Error returns "interrupted (SIGINT)" or "interrupted (SIGTERM)".
func (e *InterruptedError) Error() string {
	name := "SIGINT"
	if e.Sig == syscall.SIGTERM {
		name = "SIGTERM"
	}
	return "interrupted (" + name + ")"
}

// RepeatWindow is how long after the signal that stopped a run the same
// signal again counts as a repeat of it (SignalContext).
const RepeatWindow = time.Second

// SignalContext returns a context that SIGINT or SIGTERM cancels with an
// InterruptedError as its cause. The same signal again within RepeatWindow
// is taken as the same one (coreutils timeout, and a terminal's Ctrl-C,
// signal the process and then its process group, so one interruption
// often arrives twice), and the run still ends as it reports; a later one,
// or another signal, ends the process at once (killed by that signal).
func SignalContext() (context.Context, context.CancelCauseFunc) {
	return signalContext(RepeatWindow)
}

// signalContext is SignalContext with the repeat window given.
func signalContext(window time.Duration) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		first := <-sigs
		at := time.Now()
		cancel(&InterruptedError{Sig: first.(syscall.Signal)})
		for sig := range sigs {
			if sig == first && time.Since(at) < window {
				continue // the same interruption, delivered twice
			}
			// A second interruption ends the process at once: the signal
			// again, with its default action restored.
			signal.Stop(sigs)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(sig)
			}
			return
		}
	}()
	return ctx, cancel
}

// Interrupted returns the InterruptedError that stopped ctx, if one did, in
// place of err (which then only says "context canceled"); otherwise err.
func Interrupted(ctx context.Context, err error) error {
	var ie *InterruptedError
	if err != nil && errors.As(context.Cause(ctx), &ie) {
		// Keep what the command said about the interrupted work (e.g. how
		// to resume), with "interrupted" for the cancellation.
		// An err that is (or says) the interrupt itself, e.g. the
		// context's cause returned as is, is not said twice.
		detail := strings.ReplaceAll(err.Error(), context.Canceled.Error(), "interrupted")
		if detail = strings.ReplaceAll(detail, ie.Error(), "interrupted"); detail != "interrupted" {
			return fmt.Errorf("%w: %s", ie, detail)
		}
		return ie
	}
	return err
}

// joinOr joins names as "a, b or c".
func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
