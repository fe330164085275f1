package snapshot_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestCandidates: completion candidates for namespaces, groups and
// snapshots, and a snapshot's archives, with their bounds.
func TestCandidates(t *testing.T) {
	dir, _ := datastore(t)
	store := fixture.OpenStore(t, dir)
	ctx := context.Background()
	names := func(cs []snapshot.Candidate, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(cs)
	}
	if got, want := names(snapshot.NamespaceCandidates(ctx, store, "pr", 10)), "[{prod } {prod/db }]"; got != want {
		t.Errorf("namespaces: %s, want %s", got, want)
	}
	t0 := index.FormatTime(fixture.T0)
	want := fmt.Sprintf("[{vm/100 the latest snapshot of the group} {vm/100/%s } {vm/100/%s }]", t0, index.FormatTime(fixture.T0+3600))
	if got := names(snapshot.RefCandidates(ctx, store, nil, "vm/100", 10)); got != want {
		t.Errorf("refs: %s, want %s", got, want)
	}
	if got, want := names(snapshot.RefCandidates(ctx, store, nil, "vm/", 2)), "[{vm/100 the latest snapshot of the group} {vm/100/"+t0+" }]"; got != want {
		t.Errorf("refs bounded: %s, want %s", got, want)
	}
	all := func(string) bool { return true }
	if got, want := names(snapshot.ArchiveCandidates(ctx, store, nil, "vm/100", "", all, 10)), "[{drive-scsi0.img.fidx } {qemu-server.conf.blob }]"; got != want {
		t.Errorf("archives: %s, want %s", got, want)
	}
	images := func(n string) bool { return index.KindOf(n) == index.KindFixed }
	if got, want := names(snapshot.ArchiveCandidates(ctx, store, nil, "vm/100", "d", images, 10)), "[{drive-scsi0.img.fidx }]"; got != want {
		t.Errorf("images: %s, want %s", got, want)
	}
}
