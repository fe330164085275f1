package snapshot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestEmptyNamespaces: a namespace exists when its directory does (§1.3),
// as PBS lists it: an empty namespace directory (namespace create, nothing
// backed up yet) and one whose only content is a child namespace are
// listed and exist, alone and through a chain of stores; their listings
// are empty, not ErrNoNamespace. A namespace without a directory does not
// exist.
func TestEmptyNamespaces(t *testing.T) {
	dir, _ := datastore(t)
	for _, d := range []string{"ns/empty2", "ns/prod/ns/empty3", "ns/parent/ns/child"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	local := fixture.OpenStore(t, dir)
	chain, err := chunkstore.NewChain(fixture.OpenStore(t, fixture.NewStore(t)), fixture.OpenStore(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for name, store := range map[string]chunkstore.Store{"local": local, "chain": chain} {
		list, err := snapshot.Namespaces(ctx, store, nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range list {
			got = append(got, n.String())
		}
		if want := ",empty2,parent,parent/child,prod,prod/db,prod/empty3"; strings.Join(got, ",") != want {
			t.Errorf("%s: namespaces %q, want %q", name, strings.Join(got, ","), want)
		}
		for _, n := range []string{"empty2", "prod/empty3", "parent"} {
			if err := snapshot.Exists(ctx, store, ns(t, n)); err != nil {
				t.Errorf("%s: %s: %v", name, n, err)
			}
			entries, err := snapshot.Entries(ctx, store, ns(t, n), 0, nil)
			if err != nil || len(entries) != 0 {
				t.Errorf("%s: snapshots of %s: %v, %v; want none and no error", name, n, entries, err)
			}
			groups, err := snapshot.Groups(ctx, store, ns(t, n))
			if err != nil || len(groups) != 0 {
				t.Errorf("%s: groups of %s: %v, %v; want none and no error", name, n, groups, err)
			}
		}
		if err := snapshot.Exists(ctx, store, ns(t, "missing")); err == nil {
			t.Errorf("%s: namespace missing exists", name)
		}
	}
}
