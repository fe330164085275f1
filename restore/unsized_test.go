package restore_test

import (
	"context"
	"io"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// unsized is a store that, like a bucket server answering without
// Content-Length, does not tell the size of content files.
type unsized struct{ chunkstore.Store }

func (u unsized) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	r, _, err := u.Store.OpenFile(ctx, rel)
	return r, -1, err
}

// TestUnsizedFiles loads the manifest and plans the index of a snapshot
// whose files come without a size, and restores it byte-exact.
func TestUnsizedFiles(t *testing.T) {
	data := fixture.Mixed(5*cs+123, 8)
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	s := unsized{fixture.OpenStore(t, dir)}
	m, err := snapshot.LoadManifest(context.Background(), s, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := restore.LoadPlan(context.Background(), s, snap.Dir(), m, "drive-scsi0.img.fidx", nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Size != uint64(len(data)) {
		t.Fatalf("plan size %d, want %d", plan.Size, len(data))
	}
	target := newMemTarget(len(data))
	if err := restore.Run(context.Background(), s, plan, target, restore.Options{}, &restore.Stats{}); err != nil {
		t.Fatal(err)
	}
	fixture.EqualBytes(t, "restored", target.buf, data)
}
