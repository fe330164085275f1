package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestTargetInStoreRefused: --force does not restore over the datastore's
// own files: an index of the snapshot being restored, its manifest blob
// (blob restore), a chunk file, a new file in the store directory, or a
// hard link of a chunk outside the store. Each exits 2 and leaves the
// file as it was.
func TestTargetInStoreRefused(t *testing.T) {
	store := fixture.NewStore(t)
	conf := fixture.WriteFile(t, t.TempDir(), "qemu-server.conf", []byte("memory: 512\n"))
	backupImage(t, store, zeroMiddle(36), "qemu-server.conf:"+conf)
	snapDir := filepath.Join(store, "vm", "100", t0str)
	fidx := filepath.Join(snapDir, "drive-scsi0.img.fidx")
	manifest := filepath.Join(snapDir, "index.json.blob")
	chunks, _ := filepath.Glob(filepath.Join(store, ".chunks", "*", "*"))
	if len(chunks) == 0 {
		t.Fatal("no chunks")
	}
	outside := t.TempDir()
	hard := filepath.Join(outside, "chunk-link")
	if err := os.Link(chunks[0], hard); err != nil {
		t.Skipf("no hard link between temp dirs: %v", err)
	}
	files := []string{fidx, manifest, chunks[0]}
	before := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	for _, c := range []struct {
		name, archive, target string
	}{
		{"fidx", "drive-scsi0", fidx},
		{"manifest-blob", "qemu-server.conf.blob", manifest},
		{"chunk", "drive-scsi0", chunks[0]},
		{"new-file-in-store", "drive-scsi0", filepath.Join(store, "restored.raw")},
		{"hard-link-of-chunk", "drive-scsi0", hard},
	} {
		t.Run(c.name, func(t *testing.T) {
			mustFail(t, 2, []string{c.target, "datastore"}, "restore", "--force", "--progress", "none", "--store", store, snap0, c.archive, c.target)
		})
	}
	for _, f := range files {
		fixture.Equal(t, f, before[f])
	}
	if _, err := os.Stat(filepath.Join(store, "restored.raw")); err == nil {
		t.Error("a file was restored into the store")
	}
}

// TestLongTargetNameRestore: a target name of 254 bytes restores (its
// partial output and resume journal get shortened names beside it).
func TestLongTargetNameRestore(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(37)
	backupImage(t, store, data)
	target := filepath.Join(t.TempDir(), strings.Repeat("n", 250)+".img")
	mustOK(t, "restore", "--progress", "none", "--store", store, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, data)
}
