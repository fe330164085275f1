package cli

import (
	"strings"
	"testing"
)

// TestDisplayLines: an error's own line breaks stay line breaks, each line
// goes through Display, and a continuation line is indented so that it
// cannot pass for a line of its own.
func TestDisplayLines(t *testing.T) {
	p := &Program{Display: func(s string) string { return strings.ReplaceAll(s, "\x1b", `\x1b`) }}
	for _, c := range []struct{ in, want string }{
		{"one line", "one line"},
		{"2 chunks\n  chunk a\n  chunk b", "2 chunks\n  chunk a\n  chunk b"},
		{"x\npbsdirect: ok\x1b[2K", "x\n  pbsdirect: ok\\x1b[2K"},
	} {
		if got := p.displayLines(c.in); got != c.want {
			t.Errorf("displayLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
