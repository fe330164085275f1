package filetarget_test

import (
	"context"
	"testing"
	"unsafe"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// cs is the chunk size of the test images' backups.
const cs = 64 << 10

// snapshotOf backs data up as vm/100 (chunk size cs, key cc) in a fresh
// store and returns the store directory and snapshot.
func snapshotOf(t *testing.T, data []byte, cc *crypto.Config) (string, index.Snapshot) {
	t.Helper()
	dir := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fixture.Backup(t, dir, snap, backup.Options{ChunkSize: cs, Key: cc}, backup.Source{Name: "drive-scsi0.img", Path: img})
	return dir, snap
}

// loadPlan plans the snapshot's drive-scsi0.img.fidx.
func loadPlan(t *testing.T, s chunkstore.Store, snap index.Snapshot, cc *crypto.Config) (*restore.Plan, *index.FileInfo) {
	t.Helper()
	m, err := snapshot.LoadManifest(context.Background(), s, snap, cc)
	if err != nil {
		t.Fatal(err)
	}
	plan, fi, err := restore.LoadPlan(context.Background(), s, snap.Dir(), m, "drive-scsi0.img.fidx", cc)
	if err != nil {
		t.Fatal(err)
	}
	return plan, fi
}

// dedupImage has repeated chunks, zero chunks and a short last chunk.
func dedupImage() []byte {
	a := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: cs})
	b := fixture.Build(2, fixture.Region{Kind: fixture.Text, Len: cs})
	z := make([]byte, cs)
	var img []byte
	for _, p := range [][]byte{a, b, a, z, z, a, b, z, a} {
		img = append(img, p...)
	}
	return append(img, b[:777]...)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
