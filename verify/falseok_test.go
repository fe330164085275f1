package verify_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestIncrementalConfirmsSkipped: a run with a state skips the chunks
// verified recently but confirms each is still there; one deleted since is
// damage (missing), as in a full run, and the state forgets it. The report
// counts distinct chunks, fresh and present as checked (a shared chunk
// once), the archives each of their own.
func TestIncrementalConfirmsSkipped(t *testing.T) {
	store, snaps, ds := sharedStore(t, nil)
	st := verify.NewState(store, time.Hour)
	run := func() verify.Report {
		v := verify.New(fixture.OpenStore(t, store), verify.Options{State: st})
		rep, err := v.Run(context.Background(), snaps, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	distinct := map[crypto.Digest]bool{}
	uses := 0 // chunks of all archives: an archive counts each of its own
	for _, l := range ds {
		uses += len(l)
		for _, d := range l {
			distinct[d] = true
		}
	}
	if rep := run(); !rep.OK || rep.ChunksChecked != uint64(len(distinct)) {
		t.Fatalf("first run: ok %v, %d checked, want %d", rep.OK, rep.ChunksChecked, len(distinct))
	}
	gone := ds[snaps[2].String()][5]
	if err := os.Remove(fixture.ChunkPath(store, gone)); err != nil {
		t.Fatal(err)
	}
	rep := run()
	if rep.OK || rep.ExitCode != 1 || rep.ChunksChecked != 0 || rep.ChunksFresh != len(distinct) || rep.ChunksPresent != len(distinct)-1 || rep.DamagedChunks != 1 {
		t.Fatalf("after a chunk was deleted: ok %v exit %d, %d checked, %d fresh, %d present, %d damaged; want not ok, 0 checked, %d fresh, %d present, 1 damaged",
			rep.OK, rep.ExitCode, rep.ChunksChecked, rep.ChunksFresh, rep.ChunksPresent, rep.DamagedChunks, len(distinct), len(distinct)-1)
	}
	perArchive := 0
	for _, s := range rep.Snapshots {
		for _, a := range s.Archives {
			perArchive += a.ChunksFresh
		}
	}
	if perArchive != uses {
		t.Errorf("archives count %d chunks fresh, want %d (each its own)", perArchive, uses)
	}
	a := rep.Snapshots[2].Archives[0]
	if len(a.Damaged) != 1 || a.Damaged[0].Digest != gone.String() || !a.Damaged[0].Missing || a.Damaged[0].Offsets[0] != 5*cs {
		t.Errorf("damage: %+v", a.Damaged)
	}
	if st.Fresh(gone, cs, false, time.Now()) {
		t.Error("the state still calls the missing chunk fresh")
	}
}

// TestCRCOnlyShards: sharding applies to CRC-only checks of encrypted
// archives too: the shards together check each chunk of an archive once
// and report a damaged one once.
func TestCRCOnlyShards(t *testing.T) {
	_, cc := fixture.Key(t, 3)
	store, snaps, ds := sharedStore(t, cc)
	own := ds[snaps[0].String()][5]
	fixture.FlipByte(t, fixture.ChunkPath(store, own), -1)
	const n = 3
	var reps []verify.Report
	for i := range n {
		v := verify.New(fixture.OpenStore(t, store), verify.Options{CRCOnly: true, Shard: verify.Shard{Index: i, Count: n}, Pipeline: restore.Options{Jobs: 2}})
		rep, err := v.Run(context.Background(), snaps[:1], nil)
		if err != nil {
			t.Fatal(err)
		}
		rep.Shard = verify.Shard{Index: i, Count: n}.String()
		reps = append(reps, rep)
	}
	m, err := verify.Merge(reps)
	if err != nil {
		t.Fatal(err)
	}
	a := m.Snapshots[0].Archives[0]
	if !a.CRCOnly || m.ChunksChecked != 6 || m.DamagedChunks != 1 || len(a.Damaged) != 1 || a.Damaged[0].Digest != own.String() {
		t.Errorf("merged CRC-only shards: %d checked, %d damaged (%+v); want 6 checked and the damaged chunk once", m.ChunksChecked, m.DamagedChunks, a)
	}
}

// TestMergeDifferentSnapshots: shards that saw different snapshots (a
// backup between their runs) do not merge into an OK report: the snapshot
// only some saw is not verified; one a shard skipped as removed while
// running is skipped in the merge.
func TestMergeDifferentSnapshots(t *testing.T) {
	store, snaps, _ := sharedStore(t, nil)
	shard := func(i int, list []index.Snapshot) verify.Report {
		sh := verify.Shard{Index: i, Count: 2}
		rep, err := verify.New(fixture.OpenStore(t, store), verify.Options{Shard: sh}).Run(context.Background(), list, nil)
		if err != nil || !rep.OK {
			t.Fatalf("shard %d: %v %+v", i, err, rep)
		}
		rep.Shard = sh.String()
		return rep
	}
	early, late := shard(0, snaps[:2]), shard(1, snaps)
	m, err := verify.Merge([]verify.Report{early, late})
	if err != nil {
		t.Fatal(err)
	}
	last := m.Snapshots[len(m.Snapshots)-1]
	if m.OK || m.ExitCode == 0 || !slices.Equal(m.NotVerified, []string{snaps[2].String()}) || last.OK || !strings.Contains(last.Error, "seen by shard 1/2 only") {
		t.Errorf("merge of shards that saw different snapshots: ok %v, exit %d, not verified %v, last %+v", m.OK, m.ExitCode, m.NotVerified, last)
	}
	// Its archives say so too, not "ok (… chunks checked)".
	var text strings.Builder
	last.WriteText(&text)
	if a := last.Archives[0]; a.OK || !a.NotVerified || !strings.Contains(text.String(), "drive-scsi0.img.fidx") ||
		!strings.Contains(text.String(), " not verified (") || strings.Contains(text.String(), " ok (") {
		t.Errorf("archive of the snapshot not verified: %+v\n%s", a, text.String())
	}
	// The same shards, the earlier one having skipped it as removed.
	early.Skipped = []string{snaps[2].String()}
	if m, err = verify.Merge([]verify.Report{early, late}); err != nil || !m.OK || len(m.NotVerified) != 0 || !slices.Equal(m.Skipped, []string{snaps[2].String()}) || len(m.Snapshots) != 2 {
		t.Errorf("merge with a snapshot removed while running: %v ok %v, not verified %v, skipped %v, %d snapshots", err, m.OK, m.NotVerified, m.Skipped, len(m.Snapshots))
	}
}
