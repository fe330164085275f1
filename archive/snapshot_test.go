package archive_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestOpenSet: every image archive is opened and reads back, the blobs are
// decoded only when asked for, and a snapshot with nothing to open is an
// error.
func TestOpenSet(t *testing.T) {
	dir := fixture.NewStore(t)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	data := image()
	src := t.TempDir()
	fixture.Backup(t, dir, snap, backup.Options{ChunkSize: chunk64K},
		backup.Source{Name: "drive-scsi0.img", Path: fixture.WriteFile(t, src, "disk.raw", data)},
		backup.Source{Name: "qemu-server.conf", Path: fixture.WriteFile(t, src, "vm.conf", []byte("memory: 512\n"))})
	ctx := context.Background()
	store := fixture.OpenStore(t, dir)
	r, err := snapshot.OpenSnapshot(ctx, store, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := archive.OpenSet(ctx, r, true, true, archive.Options{CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if len(set.Readers) != 1 || set.Names[0] != "drive-scsi0.img.fidx" || len(set.Blobs) != 1 || string(set.Blobs[0].Data) != "memory: 512\n" {
		t.Fatalf("set: %v readers %v, blobs %+v", len(set.Readers), set.Names, set.Blobs)
	}
	got, err := io.ReadAll(io.NewSectionReader(set.Readers[0], 0, set.Readers[0].Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("image read back: %d bytes (%v), want %d equal", len(got), err, len(data))
	}
	noBlobs, err := archive.OpenSet(ctx, r, true, false, archive.Options{CacheSize: 8 << 20})
	if err != nil || len(noBlobs.Blobs) != 0 {
		t.Errorf("without blobs: %+v (%v)", noBlobs, err)
	}
	noBlobs.Close()
	// Blobs only: with no image archive and no blob asked for, nothing to open.
	empty := fixture.Snap(t, "", "ct", "200", fixture.T0)
	fixture.Backup(t, dir, empty, backup.Options{}, backup.Source{Name: "pct.conf", Path: fixture.WriteFile(t, src, "ct.conf", []byte("x"))})
	er, err := snapshot.OpenSnapshot(ctx, store, empty, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.OpenSet(ctx, er, true, false, archive.Options{CacheSize: 8 << 20}); err == nil {
		t.Error("a snapshot with nothing to open: no error")
	}
}
