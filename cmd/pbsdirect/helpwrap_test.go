package main

import (
	"strings"
	"testing"
)

// TestHelpWrapped: every command's description is wrapped at 80 columns as
// the others are, and every command with --ns describes it as the
// namespace that pbsdirect namespaces prints, the datastore path form only
// as the one reading that exists (not the old "as listings print it").
func TestHelpWrapped(t *testing.T) {
	var walk func(prefix []string, specs []commandSpec)
	walk = func(prefix []string, specs []commandSpec) {
		for _, sp := range specs {
			words := append(append([]string{}, prefix...), strings.Fields(sp.use)[0])
			name := strings.Join(words, " ")
			for _, line := range strings.Split(sp.long, "\n") {
				if len([]rune(line)) > 80 {
					t.Errorf("%s --help: description line of %d columns: %q", name, len([]rune(line)), line)
				}
			}
			if sp.build != nil {
				out := strings.Join(strings.Fields(pbs(t, append(words, "--help")...).out), " ")
				if strings.Contains(out, "--ns string") {
					for _, w := range []string{"namespace as pbsdirect namespaces prints it", "only when that is the only reading that exists"} {
						if !strings.Contains(out, w) {
							t.Errorf("%s --help: --ns does not say %q", name, w)
						}
					}
					if strings.Contains(out, "as listings print it") {
						t.Errorf("%s --help: --ns still says \"as listings print it\"", name)
					}
				}
			}
			walk(words, sp.sub)
		}
	}
	walk(nil, commandSpecs())
}
