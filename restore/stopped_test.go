package restore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestStoppedErrorWords: an interrupted restore's StoppedError says that
// --resume continues it, with no cause to fix and no "context canceled";
// a store failure says to resume once the cause is fixed, and names it.
func TestStoppedErrorWords(t *testing.T) {
	for _, c := range []struct {
		name      string
		err       error
		want, not []string
	}{
		{"interrupted", fmt.Errorf("fetch: %w", context.Canceled), []string{"14 of 16 chunks are durable", "--resume to continue it"},
			[]string{"once the cause is fixed", "credentials", "canceled"}},
		{"store", errors.New("store unreachable"), []string{"--resume", "once the cause is fixed", ": store unreachable"}, nil},
	} {
		e := &StoppedError{Archive: "a.fidx", Target: "/t", Partial: "/.t.pbsdirect-partial", Journal: "/.t.pbsdirect-journal", Durable: 14, Total: 16, Err: c.err}
		msg := e.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", c.name, msg, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(msg, w) {
				t.Errorf("%s: %q says %q", c.name, msg, w)
			}
		}
		if !errors.Is(e, c.err) {
			t.Errorf("%s: the cause is lost", c.name)
		}
	}
}
