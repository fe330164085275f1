package archive_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// shortWriter takes n bytes, then fails.
type shortWriter struct{ n int }

var errFull = errors.New("full")

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestCopy: an image and a blob archive are written whole and in order; a
// writer that fails is a CopyError saying how many bytes got through.
func TestCopy(t *testing.T) {
	dir := fixture.NewStore(t)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	data := image()
	src := t.TempDir()
	fixture.Backup(t, dir, snap, backup.Options{ChunkSize: chunk64K},
		backup.Source{Name: "drive-scsi0.img", Path: fixture.WriteFile(t, src, "disk.raw", data)},
		backup.Source{Name: "qemu-server.conf", Path: fixture.WriteFile(t, src, "vm.conf", []byte("memory: 512\n"))})
	ctx := context.Background()
	r, err := snapshot.OpenSnapshot(ctx, fixture.OpenStore(t, dir), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if n, err := archive.Copy(ctx, r, "drive-scsi0.img.fidx", &b, archive.Options{Fetchers: 2}); err != nil || n != int64(len(data)) || !bytes.Equal(b.Bytes(), data) {
		t.Errorf("image: %d bytes, %v; want %d equal", n, err, len(data))
	}
	b.Reset()
	if n, err := archive.Copy(ctx, r, "qemu-server.conf.blob", &b, archive.Options{}); err != nil || n != 12 || b.String() != "memory: 512\n" {
		t.Errorf("blob: %d bytes %q, %v", n, b.String(), err)
	}
	n, err := archive.Copy(ctx, r, "drive-scsi0.img.fidx", &shortWriter{n: 100 << 10}, archive.Options{Fetchers: 2})
	var ce *archive.CopyError
	if !errors.As(err, &ce) || !errors.Is(err, errFull) || ce.N != n || n != 100<<10 || !strings.HasSuffix(ce.Name, "/drive-scsi0.img.fidx") {
		t.Errorf("failing writer: %d bytes, %v", n, err)
	}
	if archive.FileName("drive-scsi0.img.fidx") != "drive-scsi0.img" || archive.FileName("qemu-server.conf.blob") != "qemu-server.conf" ||
		archive.ExportName("drive-scsi0.img.fidx") != "drive-scsi0" {
		t.Error("archive names as files and exports")
	}
}
