package drill

import (
	"context"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestLatestChain lists the newest snapshot's disk images over a chain of
// two stores whose first copy of the manifest is damaged: Latest reads the
// manifest as every command does (snapshot's reader, which pins the member
// with a good copy), so the images are listed, not "?".
func TestLatestChain(t *testing.T) {
	img := fixture.WriteFile(t, t.TempDir(), "disk.img", fixture.Mixed(256<<10, 1))
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	var members []chunkstore.Store
	for i := range 2 {
		dir := fixture.NewStore(t)
		fixture.Backup(t, dir, snap, backup.Options{ChunkSize: 64 << 10}, backup.Source{Name: "drive-scsi0.img", Path: img})
		if i == 0 {
			fixture.FlipByte(t, fixture.SnapPath(dir, snap, snapshot.ManifestName), 20)
		}
		members = append(members, fixture.OpenStore(t, dir))
	}
	chain, err := chunkstore.NewChain(members...)
	if err != nil {
		t.Fatal(err)
	}
	var warned []error
	items, err := Latest(context.Background(), chain, verify.Scope{}, func(_ index.Snapshot, err error) { warned = append(warned, err) })
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{{snap.String(), "drive-scsi0.img.fidx"}}
	if len(items) != 1 || items[0] != want[0] || len(warned) != 0 {
		t.Errorf("Latest = %v (warned %v), want %v", items, warned, want)
	}
}
