package snapshot

import (
	"testing"

	"github.com/pbsdirect/pbsdirect/index"
)

// TestParseNSArg: the readings of a namespace argument.
func TestParseNSArg(t *testing.T) {
	for _, c := range []struct {
		arg         string
		plain, path string // "-": no such reading
		bad         bool
	}{
		{"", "", "-", false},
		{"prod", "prod", "-", false},
		{"prod/db/", "prod/db", "-", false},
		{"ns", "ns", "-", false},
		{"ns/prod", "ns/prod", "prod", false},
		{"ns/ns", "ns/ns", "ns", false},
		{"ns/prod/ns/db", "ns/prod/ns/db", "prod/db", false},
		{"ns/prod/db", "ns/prod/db", "-", false},
		{"ns/prod/x/db", "ns/prod/x/db", "-", false},
		{"ns/a/ns/b/ns/c/ns/d", "-", "a/b/c/d", false}, // 8 levels: only the path form
		{"ns/-x", "-", "-", true},
		{"a//b", "-", "-", true},
	} {
		a, err := ParseNSArg(c.arg)
		if c.bad {
			if err == nil {
				t.Errorf("%q: want an error, got readings %v and %v", c.arg, a.plain, a.path)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.arg, err)
			continue
		}
		show := func(ns index.Namespace) string {
			if ns == nil {
				return "-"
			}
			return ns.String()
		}
		if show(a.plain) != c.plain || show(a.path) != c.path {
			t.Errorf("%q: readings %q and %q, want %q and %q", c.arg, show(a.plain), show(a.path), c.plain, c.path)
		}
	}
}
