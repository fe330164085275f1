package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyIncrementalMissing: verify --state after a chunk was deleted
// says how many chunks it checked, skipped as fresh and confirmed present,
// and fails (exit 1) on the missing one, in text and JSON.
func TestVerifyIncrementalMissing(t *testing.T) {
	f := newFleet(t)
	snap := f.snaps[0].String()
	state := filepath.Join(t.TempDir(), "state")
	mustOK(t, "verify", "--store", f.store, "--state", state, snap)
	gone := f.digests[snap][5]
	remove(t, fixture.ChunkPath(f.store, gone))
	n := len(f.digests[snap])
	r := mustFail(t, 1, []string{"verification failed"}, "verify", "--store", f.store, "--state", state, snap)
	want := fmt.Sprintf("0 chunks verified, 1 damaged or missing, %d skipped as fresh (%d confirmed present)", n, n-1)
	if !strings.Contains(r.out, want) || !strings.Contains(r.out, "missing chunk "+gone.String()) || !strings.Contains(r.out, "FAILED") {
		t.Errorf("text report lacks %q or the missing chunk: %v", want, r)
	}
	// The missing chunk is forgotten by the state: the next run reads it.
	rep := verifyReport(t, 1, "--store", f.store, "--state", state, snap)
	if rep.ChunksChecked != 0 || rep.DamagedChunks != 1 || rep.ChunksFresh != n-1 || rep.ChunksPresent != n-1 {
		t.Errorf("JSON report: %d checked, %d damaged, %d fresh, %d present; want 0, 1, %d, %d", rep.ChunksChecked, rep.DamagedChunks, rep.ChunksFresh, rep.ChunksPresent, n-1, n-1)
	}
}

// TestReportMergeDifferentSnapshots: shards whose runs a backup came
// between saw different snapshots: report merge does not call the new
// snapshot verified (exit 3, naming it), though every shard exited 0.
func TestReportMergeDifferentSnapshots(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	shard := func(i int) string {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		mustOK(t, "verify", "--store", f.store, "--all-namespaces", "--shard", fmt.Sprintf("%d/2", i), "--report", p)
		return p
	}
	s0 := shard(0)
	common := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 4 * fleetCS})
	f.add(t, t.TempDir(), fixture.Snap(t, "", "vm", "100", fixture.T0+86400), common, 77)
	newSnap := f.snaps[len(f.snaps)-1].String()
	s1 := shard(1)
	r := mustFail(t, 3, []string{"seen by only some shards", newSnap}, "report", "merge", s0, s1)
	if !strings.Contains(r.out, "not verified: seen by shard 1/2 only, not by shard 0/2") || !strings.Contains(r.out, "checked 6 snapshot(s), 1 failed") {
		t.Errorf("text: %v", r)
	}
	r = pbs(t, "report", "merge", "--output-format", "json", s0, s1)
	var m verify.Report
	if err := json.Unmarshal([]byte(r.out), &m); err != nil || r.code != 3 || m.OK || m.ExitCode != 3 || !slices.Equal(m.NotVerified, []string{newSnap}) {
		t.Errorf("JSON merge: %v: %v", err, r)
	}
}

// TestBackupReplacesDamagedChunkCLI: after verify found a chunk damaged, the
// next backup of the same data writes it again (saying so on stderr and in
// its summary) instead of counting it "already there", on a directory and
// on an S3 bucket; the new snapshot verifies, the damaged copy is kept as
// <digest>.0.bad.
func TestBackupReplacesDamagedChunkCLI(t *testing.T) {
	data := fixture.Build(31, fixture.Region{Kind: fixture.Random, Len: fleetCS})
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", data)
	d := crypto.Digest(sha256.Sum256(data))
	for _, backend := range []string{"dir", "s3"} {
		t.Run(backend, func(t *testing.T) {
			var store, root string
			var flags []string
			if backend == "dir" {
				store = fixture.NewStore(t)
				root = store
			} else {
				srv := testenv.StartS3(t)
				bktSetEnv(t, "")
				root = filepath.Join(srv.Bucket(t, "bkt-replace"), "store")
				store, flags = "s3://bkt-replace/store", []string{"--s3-endpoint", srv.Endpoint}
			}
			bk := func(btime string) result {
				return pbs(t, append(append([]string{"backup", "--store", store, "--chunk-size", "64", "--backup-type", "vm", "--backup-id", "100", "--backup-time", btime}, flags...),
					"drive-scsi0.img:"+img)...)
			}
			if r := bk("2026-11-01T00:00:00Z"); r.code != 0 {
				t.Fatal(r)
			}
			p := filepath.Join(root, ".chunks", d.String()[:4], d.String())
			if backend == "s3" {
				// Damaged in place on the gateway's disk, the object keeps
				// the writer's time pbsdirect recorded in it: within the
				// manifest's second (S3 stamps whole seconds) that would
				// still order it before the manifest. Damage it a second
				// later, as any damage after the backup is.
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
			}
			fixture.FlipByte(t, p, -1)
			mustFail(t, 1, nil, append([]string{"verify", "--store", store}, flags...)...)
			r := bk("2026-11-02T00:00:00Z")
			if r.code != 0 || !strings.Contains(r.err, "chunk "+d.String()+" in the store was damaged") || !strings.Contains(r.out, "replaced 1 damaged chunk(s)") ||
				!strings.Contains(r.out, "already there: 0 chunks with data") {
				t.Errorf("second backup: %v", r)
			}
			if _, err := os.Stat(p + ".0.bad"); err != nil {
				t.Errorf("damaged copy: %v", err)
			}
			mustOK(t, append([]string{"verify", "--store", store}, flags...)...)
			r = pbs(t, append(append([]string{"backup", "--output-format", "json", "--store", store, "--chunk-size", "64", "--backup-type", "vm", "--backup-id", "100", "--backup-time", "2026-11-03T00:00:00Z"}, flags...),
				"drive-scsi0.img:"+img)...)
			var sum backupSummary
			if err := json.Unmarshal([]byte(r.out), &sum); err != nil || r.code != 0 || sum.Existing != 1 || sum.Replaced != 0 {
				t.Errorf("third backup: %v %+v: %v", err, sum, r)
			}
		})
	}
}
