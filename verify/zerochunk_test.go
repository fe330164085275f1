package verify_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// zeroPositions is the number of zero chunks in zeroStore's images: more
// than a damaged chunk lists offsets of.
const zeroPositions = 20

// zeroStore builds a datastore with two snapshots of vm/100 in chunks of
// chunk bytes, each image 3 random chunks, zeroPositions zero chunks and
// one random chunk, encrypted with cc when set. It returns the store
// directory, the snapshots and the digest of the zero chunk.
func zeroStore(t *testing.T, chunk int, cc *crypto.Config) (string, []index.Snapshot, crypto.Digest) {
	t.Helper()
	store := fixture.NewStore(t)
	dir := t.TempDir()
	snaps := []index.Snapshot{fixture.Snap(t, "", "vm", "100", fixture.T0), fixture.Snap(t, "", "vm", "100", fixture.T0+3600)}
	for i, s := range snaps {
		img := fixture.Build(uint64(20+i),
			fixture.Region{Kind: fixture.Random, Len: 3 * int64(chunk)},
			fixture.Region{Kind: fixture.Zero, Len: zeroPositions * int64(chunk)},
			fixture.Region{Kind: fixture.Random, Len: int64(chunk)})
		p := fixture.WriteFile(t, dir, "img.raw", img)
		fixture.Backup(t, store, s, backup.Options{ChunkSize: uint64(chunk), Key: cc}, backup.Source{Name: "drive-scsi0.img", Path: p})
	}
	zd := fixture.ZeroDigest(chunk, cc)
	if _, err := os.Stat(fixture.ChunkPath(store, zd)); err != nil {
		t.Fatalf("backup wrote no zero chunk: %v", err)
	}
	return store, snaps, zd
}

// TestVerifyZeroChunk: the zero chunk a fixed index refers to by digest,
// which a restore never reads, is read and checked by verify as any chunk
// (a PBS client restoring the archive needs it): plain and keyed, of any
// chunk size; once per run, counted; missing or damaged it is damage with
// the offsets of the zero positions, counted in full.
func TestVerifyZeroChunk(t *testing.T) {
	_, cc := fixture.Key(t, 5)
	for _, c := range []struct {
		name    string
		chunk   int
		cc      *crypto.Config
		key     bool // verify with the key (else --crc-only without it)
		damage  string
		missing bool
	}{
		{"plain/missing", cs, nil, true, "remove", true},
		{"plain/corrupt", cs, nil, true, "flip", false},
		{"plain-128k/missing", 2 * cs, nil, true, "remove", true},
		{"encrypted/corrupt", cs, cc, true, "flip", false},
		{"encrypted/missing", cs, cc, true, "remove", true},
		{"encrypted-crc-only/corrupt", cs, cc, false, "flip", false},
		{"plain/intact", cs, nil, true, "", false},
		{"encrypted/intact", cs, cc, true, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, snaps, zd := zeroStore(t, c.chunk, c.cc)
			switch p := fixture.ChunkPath(store, zd); c.damage {
			case "remove":
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			case "flip":
				fixture.FlipByte(t, p, -1)
			}
			opts := verify.Options{Pipeline: restore.Options{Jobs: 2}}
			if c.key {
				opts.Key = c.cc
			} else {
				opts.CRCOnly = true
			}
			counting := fixture.NewCountingStore(fixture.OpenStore(t, store))
			rep, err := verify.New(counting, opts).Run(context.Background(), snaps, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.damage == "" {
				// 4 random chunks of each snapshot and the zero chunk once.
				if !rep.OK || rep.ChunksChecked != 2*4+1 || counting.Count(zd) != 1 {
					t.Errorf("intact: ok %v, %d chunks checked, zero chunk read %d times; want ok, 9 checked, read once", rep.OK, rep.ChunksChecked, counting.Count(zd))
				}
				return
			}
			if rep.OK || rep.ExitCode != 1 {
				t.Fatalf("zero chunk %s: ok %v, exit %d; want damage, exit 1", c.damage, rep.OK, rep.ExitCode)
			}
			for _, s := range rep.Snapshots {
				a := s.Archives[0]
				if len(a.Damaged) != 1 {
					t.Fatalf("%s: damaged %+v, want the zero chunk", s.Snapshot, a.Damaged)
				}
				d := a.Damaged[0]
				if d.Digest != zd.String() || d.Missing != c.missing || d.Length != c.chunk || len(d.Offsets) != verify.MaxOffsets ||
					d.Offsets[0] != 3*uint64(c.chunk) || d.Offsets[1] != 4*uint64(c.chunk) || d.OffsetCount != zeroPositions {
					t.Errorf("%s: damaged %+v; want the zero chunk %s at offsets %d, %d, … (%d in all)", s.Snapshot, d, zd, 3*c.chunk, 4*c.chunk, zeroPositions)
				}
			}
		})
	}
}

// TestVerifyZeroChunkShardsState: the zero chunk belongs to one shard,
// which alone checks it; an incremental state records it, and a later run
// that skips it as fresh confirms it is still there.
func TestVerifyZeroChunkShardsState(t *testing.T) {
	store, snaps, zd := zeroStore(t, cs, nil)
	fixture.FlipByte(t, fixture.ChunkPath(store, zd), -1)
	var reps []verify.Report
	for i := range 2 {
		sh := verify.Shard{Index: i, Count: 2}
		rep, err := verify.New(fixture.OpenStore(t, store), verify.Options{Shard: sh}).Run(context.Background(), snaps, nil)
		if err != nil {
			t.Fatal(err)
		}
		if owner := sh.Has(zd); rep.OK == owner {
			t.Errorf("shard %s (holds the zero chunk: %v): ok %v", sh, owner, rep.OK)
		}
		rep.Shard = sh.String()
		reps = append(reps, rep)
	}
	m, err := verify.Merge(reps)
	if err != nil || m.OK || m.DamagedChunks != 2 {
		t.Errorf("merged: %v, ok %v, %d damaged; want the zero chunk damaged in both snapshots", err, m.OK, m.DamagedChunks)
	}

	store, snaps, zd = zeroStore(t, cs, nil)
	st := verify.NewState(store, time.Hour)
	run := func() verify.Report {
		rep, err := verify.New(fixture.OpenStore(t, store), verify.Options{State: st}).Run(context.Background(), snaps, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(); !rep.OK || !st.Fresh(zd, cs, false, time.Now()) {
		t.Fatalf("first run: ok %v; the state records the zero chunk: %v", rep.OK, st.Fresh(zd, cs, false, time.Now()))
	}
	if err := os.Remove(fixture.ChunkPath(store, zd)); err != nil {
		t.Fatal(err)
	}
	rep := run()
	if rep.OK || rep.ChunksChecked != 0 || rep.ChunksFresh != 2*4+1 || rep.ChunksPresent != 2*4 || rep.DamagedChunks != 2 {
		t.Errorf("zero chunk removed, skipped as fresh: ok %v, %d checked, %d fresh, %d present, %d damaged; want not ok, 0, 9, 8, 2",
			rep.OK, rep.ChunksChecked, rep.ChunksFresh, rep.ChunksPresent, rep.DamagedChunks)
	}
}
