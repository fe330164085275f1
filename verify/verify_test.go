package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

const cs = 64 << 10

// sharedStore builds a datastore with two snapshots of vm/100 and one of
// vm/101 that share chunks: every image starts with the same 4 chunks
// ("common"), then has chunks of its own. It returns the store directory,
// the snapshots and the digests of each snapshot's drive-scsi0.img.fidx.
func sharedStore(t *testing.T, cc *crypto.Config) (string, []index.Snapshot, map[string][]crypto.Digest) {
	t.Helper()
	store := fixture.NewStore(t)
	dir := t.TempDir()
	common := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 4 * cs})
	snaps := []index.Snapshot{
		fixture.Snap(t, "", "vm", "100", fixture.T0),
		fixture.Snap(t, "", "vm", "100", fixture.T0+3600),
		fixture.Snap(t, "", "vm", "101", fixture.T0),
	}
	digests := map[string][]crypto.Digest{}
	for i, s := range snaps {
		img := append(slices.Clone(common), fixture.Build(uint64(10+i), fixture.Region{Kind: fixture.Random, Len: 3 * cs})...)
		p := fixture.WriteFile(t, dir, fmt.Sprintf("%d.raw", i), img)
		fixture.Backup(t, store, s, backup.Options{ChunkSize: cs, Key: cc}, backup.Source{Name: "drive-scsi0.img", Path: p})
		_, digests[s.String()] = fixture.Digests(t, fixture.SnapPath(store, s, "drive-scsi0.img.fidx"))
	}
	return store, snaps, digests
}

// TestSharedChunksOnce: chunks shared between snapshots are read and
// checked once per Verifier, and all snapshots verify OK.
func TestSharedChunksOnce(t *testing.T) {
	store, snaps, _ := sharedStore(t, nil)
	v := verify.New(fixture.OpenStore(t, store), verify.Options{Pipeline: restore.Options{Jobs: 2}})
	var checked, known uint64
	for _, s := range snaps {
		r := v.Snapshot(context.Background(), s)
		if !r.OK {
			t.Fatalf("%s: %+v", s, r)
		}
		for _, a := range r.Archives {
			checked += a.ChunksChecked
			known += uint64(a.ChunksKnown)
		}
	}
	if checked != 4+3*3 || known != 2*4 {
		t.Errorf("checked %d chunks, %d known; want 13 and 8", checked, known)
	}
}

// TestDamagedShared: a deleted shared chunk is reported in every snapshot
// that uses it, with its byte range; a deleted chunk of one snapshot only
// there.
func TestDamagedShared(t *testing.T) {
	store, snaps, ds := sharedStore(t, nil)
	shared, own := ds[snaps[0].String()][1], ds[snaps[2].String()][5]
	for _, d := range []crypto.Digest{shared, own} {
		if err := os.Remove(fixture.ChunkPath(store, d)); err != nil {
			t.Fatal(err)
		}
	}
	v := verify.New(fixture.OpenStore(t, store), verify.Options{})
	for i, s := range snaps {
		r := v.Snapshot(context.Background(), s)
		want := []string{shared.String()}
		if i == 2 {
			want = append(want, own.String())
		}
		var got []string
		for _, a := range r.Archives {
			for _, d := range a.Damaged {
				got = append(got, d.Digest)
				wantOff := uint64(cs)
				if d.Digest == own.String() {
					wantOff = 5 * cs
				}
				if len(d.Offsets) != 1 || d.Offsets[0] != wantOff || d.Length != cs {
					t.Errorf("%s: %s at %v length %d, want offset %d", s, d.Digest, d.Offsets, d.Length, wantOff)
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if r.OK || !slices.Equal(got, want) {
			t.Errorf("%s: ok %v, damaged %v, want %v", s, r.OK, got, want)
		}
	}
}

// TestDamagedBounded: past MaxDamaged, damaged chunks are counted, not
// listed; DamagedList still gets every one of them, one JSON line each.
func TestDamagedBounded(t *testing.T) {
	store, snaps, ds := sharedStore(t, nil)
	for _, d := range ds[snaps[2].String()][4:] {
		if err := os.Remove(fixture.ChunkPath(store, d)); err != nil {
			t.Fatal(err)
		}
	}
	var list bytes.Buffer
	v := verify.New(fixture.OpenStore(t, store), verify.Options{MaxDamaged: 2, DamagedList: &list})
	rep := verify.Report{OK: true}
	rep.Add(v.Snapshot(context.Background(), snaps[2]))
	if rep.OK || rep.DamagedChunks != 3 || rep.DamagedUnlisted != 1 || len(rep.Snapshots[0].Archives[0].Damaged) != 2 {
		t.Errorf("report: %+v", rep)
	}
	lines := strings.Split(strings.TrimSpace(list.String()), "\n")
	for _, l := range lines {
		var d verify.DamagedChunk
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.Snapshot != snaps[2].String() || d.Archive != "drive-scsi0.img.fidx" {
			t.Errorf("list line %q: %v", l, err)
		}
	}
	if len(lines) != 3 || v.Err() != nil {
		t.Errorf("list: %d lines, want 3 (%v)", len(lines), v.Err())
	}
}
