// Package restoretest holds the helpers the tests of restore and of its
// target packages share: a snapshot backed up from an image, and its plan.
// It lives apart from internal/fixture because it imports restore, whose
// own tests import fixture.
//
// Test support only: imported by tests and by the other packages under
// internal/, never by a non-test package outside internal/ (TestLayout in
// the module root's layout_test.go checks this).
package restoretest

import (
	"context"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// ChunkSize is the chunk size, in bytes, of the backups SnapshotOf makes.
const ChunkSize = 64 << 10

// SnapshotOf backs data up as vm/100 (chunk size ChunkSize, key cc; nil
// for none) in a fresh store and returns the store directory and snapshot.
func SnapshotOf(t *testing.T, data []byte, cc *crypto.Config) (string, index.Snapshot) {
	t.Helper()
	dir := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fixture.Backup(t, dir, snap, backup.Options{ChunkSize: ChunkSize, Key: cc}, backup.Source{Name: "drive-scsi0.img", Path: img})
	return dir, snap
}

// LoadPlan plans the snapshot's drive-scsi0.img.fidx in s; it fails the
// test on any error.
func LoadPlan(t *testing.T, s chunkstore.Store, snap index.Snapshot, cc *crypto.Config) (*restore.Plan, *index.FileInfo) {
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
