package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
)

// failoverImage is 16 random 64 KiB chunks: every chunk unique.
func failoverImage() []byte {
	return fixture.Build(11, fixture.Region{Kind: fixture.Random, Len: 16 << 16})
}

// chunkFile returns the path of d's chunk file in the datastore directory dir.
func chunkFile(dir string, d crypto.Digest) string {
	return filepath.Join(dir, filepath.FromSlash(chunkstore.ChunkRelPath(d)))
}

// flipByte damages the chunk file p in the middle.
func flipByte(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFailoverThreeStores: a restore from a local directory (the PBS 4
// cache: two chunks missing, one evicted to 0 bytes, one damaged), then S3
// (versitygw: one of those missing, one damaged), then GCS
// (fake-gcs-server: complete) is byte-exact, takes each chunk from the first
// store with a good copy, and reports per store how many chunks it served
// and how many copies fell through. verify takes the same list.
func TestFailoverThreeStores(t *testing.T) {
	data := failoverImage()
	local := fixture.NewStore(t)
	backupImage(t, local, data, "--chunk-size", "64")
	_, ds := fixture.Digests(t, filepath.Join(local, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	a, b, c, d := ds[1], ds[5], ds[9], ds[12]

	root := t.TempDir()
	s3dir := fixture.CopyDir(t, local, filepath.Join(root, "mirror", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	gcs := testenv.StartGCS(t, "gmirror")
	bktUploadGCS(t, gcs.Server, "gmirror", "ds", local)
	bktSetEnv(t, strings.TrimPrefix(gcs.URL, "http://"))

	// The cache: a and b missing, c evicted (0 bytes), d damaged.
	remove(t, chunkFile(local, a))
	remove(t, chunkFile(local, b))
	if err := os.Truncate(chunkFile(local, c), 0); err != nil {
		t.Fatal(err)
	}
	flipByte(t, chunkFile(local, d))
	// The bucket: a missing, b damaged.
	remove(t, chunkFile(s3dir, a))
	flipByte(t, chunkFile(s3dir, b))
	s3.AdoptFiles(t)

	stores := []string{"--store", local, "--store", "s3://mirror/ds", "--s3-endpoint", s3.Endpoint, "--store", "gs://gmirror/ds"}
	target := filepath.Join(t.TempDir(), "restored.raw")
	s := restoreJSON(t, append(stores, snap0, "drive-scsi0", target)...)
	fixture.Equal(t, target, data)
	if len(s.Stores) != 3 {
		t.Fatalf("summary has %d stores, want 3: %+v", len(s.Stores), s.Stores)
	}
	want := []chunkstore.MemberStats{
		{Chunks: int64(len(ds) - 4), Missing: 3, Damaged: 1},
		{Chunks: 2, Missing: 1, Damaged: 1},
		{Chunks: 2},
	}
	for i, w := range want {
		got := s.Stores[i]
		if got.Chunks != w.Chunks || got.Missing != w.Missing || got.Damaged != w.Damaged || (w.Chunks > 0) != (got.Bytes > 0) {
			t.Errorf("store %d (%s): %+v, want %d chunks, %d missing, %d damaged", i+1, got.Store, got, w.Chunks, w.Missing, w.Damaged)
		}
	}
	if s.ChunksFetched != uint64(len(ds)) {
		t.Errorf("%d chunks restored, want %d", s.ChunksFetched, len(ds))
	}
	if !strings.HasPrefix(s.Stores[1].Store, "s3://mirror/ds") || !strings.HasPrefix(s.Stores[2].Store, "gs://gmirror/ds") {
		t.Errorf("stores named %q, %q", s.Stores[1].Store, s.Stores[2].Store)
	}

	// Text names each store's share.
	r := mustOK(t, append(append([]string{"restore"}, stores...), snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw"))...)
	if !strings.Contains(r.out, "store 3 gs://gmirror/ds: 2 chunks") {
		t.Errorf("text summary lacks the per-store counts: %v", r)
	}
	// verify takes the same list and finds every chunk good somewhere.
	mustOK(t, append([]string{"verify"}, append(stores, snap0)...)...)
	// Without the last store, a and b have no good copy: the failure
	// names them.
	r = pbs(t, append([]string{"verify"}, append(stores[:6], snap0)...)...)
	// a is in no store (missing), b only damaged.
	if r.code != 1 || !strings.Contains(r.out, "missing chunk "+a.String()) || !strings.Contains(r.out, "damaged chunk "+b.String()) ||
		strings.Count(r.out, "damaged chunk ")+strings.Count(r.out, "missing chunk ") != 2 {
		t.Errorf("verify without the complete store: want exactly %s and %s damaged: %v", a, b, r)
	}
}

// TestDegradedRestore: with --on-missing zero and --on-corrupt zero, a
// restore writes zeros for exactly the byte ranges of the missing and
// damaged chunks (two adjacent chunks: one merged range; one more
// elsewhere), lists them in text and JSON, keeps every other byte exact and
// exits 1 "restored with damage"; without them it fails and keeps nothing.
func TestDegradedRestore(t *testing.T) {
	data := failoverImage()
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "64")
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	remove(t, chunkFile(store, ds[3]))
	flipByte(t, chunkFile(store, ds[4]))
	if err := os.Truncate(chunkFile(store, ds[10]), 0); err != nil {
		t.Fatal(err)
	}
	const cs = 64 << 10
	wantRanges := []restore.Range{{Offset: 3 * cs, Length: 2 * cs}, {Offset: 10 * cs, Length: cs}}
	want := append([]byte(nil), data...)
	for _, r := range wantRanges {
		clear(want[r.Offset : r.Offset+r.Length])
	}

	target := filepath.Join(t.TempDir(), "fail.raw")
	mustFail(t, 1, []string{"chunk", "kept", "--resume", "--on-missing zero"}, "restore", "--store", store, snap0, "drive-scsi0", target)
	noFile(t, target)
	// Missing zeroed, corrupt not: still a failure (the rest kept again).
	mustFail(t, 1, []string{ds[4].String(), "--resume"}, "restore", "--resume", "--on-missing", "zero", "--store", store, snap0, "drive-scsi0", target)
	noFile(t, target)

	target = filepath.Join(t.TempDir(), "degraded.raw")
	r := pbs(t, "restore", "--output-format", "json", "--on-missing", "zero", "--on-corrupt", "zero", "--store", store, snap0, "drive-scsi0", target)
	if r.code != 1 || !strings.Contains(r.err, "restored with damage") {
		t.Fatalf("want exit 1, restored with damage: %v", r)
	}
	fixture.Equal(t, target, want)
	var s restore.Summary
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.out)
	}
	if s.ExitCode != 1 || s.DamagedChunks != 3 || len(s.DamagedRanges) != 2 || s.DamagedRanges[0] != wantRanges[0] || s.DamagedRanges[1] != wantRanges[1] {
		t.Errorf("JSON: exit-code %d, %d damaged chunks, ranges %+v; want 1, 3, %+v", s.ExitCode, s.DamagedChunks, s.DamagedRanges, wantRanges)
	}
	r = pbs(t, "restore", "--on-missing", "zero", "--on-corrupt", "zero", "--store", store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "text.raw"))
	if r.code != 1 || !strings.Contains(r.out, "RESTORED WITH DAMAGE") || !strings.Contains(r.out, "[196608,327680)") || !strings.Contains(r.out, "[655360,720896)") {
		t.Errorf("text: %v", r)
	}
	// Over an existing file full of 0xff (--force), the damaged ranges
	// must be zeroed, not left as they were.
	old := filepath.Join(t.TempDir(), "old.raw")
	if err := os.WriteFile(old, bytes.Repeat([]byte{0xff}, len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := pbs(t, "restore", "--force", "--on-missing", "zero", "--on-corrupt", "zero", "--store", store, snap0, "drive-scsi0", old); r.code != 1 {
		t.Fatalf("over an existing file: %v", r)
	}
	fixture.Equal(t, old, want)
	mustFail(t, 2, []string{"--on-corrupt"}, "restore", "--on-corrupt", "maybe", "--store", store, snap0, "drive-scsi0", target)
}

// TestChainMemberUnreachable: a store of a chain that cannot be reached is
// left out with a warning and the others serve; a chain of nothing
// reachable fails with exit 3.
func TestChainMemberUnreachable(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(31)
	backupImage(t, store, data)
	bktSetEnv(t, "127.0.0.1:1")
	down := "s3://bkt/store"
	target := filepath.Join(t.TempDir(), "out.img")
	r := mustOK(t, "restore", "--store", store, "--store", down, "--s3-endpoint", "http://127.0.0.1:1", snap0, "drive-scsi0", target)
	if !strings.Contains(r.err, "--store "+down+" left out") {
		t.Errorf("no warning for the unreachable store: %v", r)
	}
	fixture.Equal(t, target, data)
	mustFail(t, 3, []string{down}, "verify", "--store", down, "--store", "gs://bkt/store", "--s3-endpoint", "http://127.0.0.1:1", snap0)
}
