package snapshot_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestNSArgResolve: the plain reading of --ns (as 'namespaces' prints it)
// wins whenever that namespace exists, even when the path reading exists
// too; only the path reading existing is refused naming both; neither
// existing is the plain reading, for reading commands and backup alike.
func TestNSArgResolve(t *testing.T) {
	for _, c := range []struct {
		name  string
		exist []string // namespaces in the store
		arg   string
		want  string // "!": refused
	}{
		{"both", []string{"prod", "ns/prod"}, "ns/prod", "ns/prod"},
		{"plain-only", []string{"ns/prod"}, "ns/prod", "ns/prod"},
		{"path-only", []string{"prod"}, "ns/prod", "!"},
		{"neither", nil, "ns/prod", "ns/prod"},
		{"path-of-nested", []string{"ns/prod"}, "ns/ns/ns/prod", "!"},
		{"one-reading", []string{"prod"}, "prod", "prod"},
		{"only-path-form", nil, "ns/a/ns/b/ns/c/ns/d", "a/b/c/d"},
	} {
		for _, create := range []bool{false, true} {
			dir := fixture.NewStore(t)
			for _, n := range c.exist {
				d := filepath.Join(dir, ns(t, n).Path(), "vm", "100")
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "owner"), []byte("root@pam\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a, err := snapshot.ParseNSArg(c.arg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Resolve(ctx, fixture.OpenStore(t, dir), create)
			switch {
			case c.want == "!":
				if !errors.Is(err, snapshot.ErrAmbiguousNamespace) {
					t.Errorf("%s (create %v): want a refusal, got %q, %v", c.name, create, got, err)
				}
			case err != nil:
				t.Errorf("%s (create %v): %v", c.name, create, err)
			case got.String() != c.want:
				t.Errorf("%s (create %v): namespace %q, want %q", c.name, create, got, c.want)
			}
		}
	}
}
