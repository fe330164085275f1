package verify_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// digests returns n made-up chunk digests, the same every run.
func digests(n int) []crypto.Digest {
	ds := make([]crypto.Digest, n)
	for i := range ds {
		ds[i] = crypto.Digest(sha256.Sum256([]byte(fmt.Sprint(i))))
	}
	return ds
}

// TestShardsCoverOnce: the N shards of a run hold every chunk exactly once
// (so together they check each chunk once), each about 1/N of them, and a
// chunk's shard is its digest's (Of), the same for every run.
func TestShardsCoverOnce(t *testing.T) {
	ds := digests(6000)
	for _, n := range []int{0, 1, 2, 3, 7, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			per := make([]int, max(n, 1))
			for _, d := range ds {
				holders := 0
				for i := range max(n, 1) {
					if (verify.Shard{Index: i, Count: n}).Has(d) {
						holders++
						per[i]++
						if n > 1 && verify.Of(d, n) != i {
							t.Fatalf("chunk %s in shard %d/%d, Of says %d", d, i, n, verify.Of(d, n))
						}
					}
				}
				if holders != 1 {
					t.Fatalf("chunk %s held by %d of %d shards, want 1", d, holders, n)
				}
			}
			for i, c := range per {
				// Far from an even share only if the assignment is not by digest.
				if want := len(ds) / len(per); c < want/2 || c > want*3/2 {
					t.Errorf("shard %d/%d holds %d of %d chunks, want about %d", i, n, c, len(ds), want)
				}
			}
		})
	}
}

// TestParseShard: "I/N" and "auto/N" (the index from the batch system's
// variable), and what is refused.
func TestParseShard(t *testing.T) {
	env := map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "2"}
	for _, c := range []struct {
		spec string
		env  map[string]string
		want verify.Shard
		err  string
	}{
		{"0/1", nil, verify.Shard{Index: 0, Count: 1}, ""},
		{"3/4", nil, verify.Shard{Index: 3, Count: 4}, ""},
		{"auto/3", env, verify.Shard{Index: 2, Count: 3}, ""},
		{"auto/3", map[string]string{"JOB_COMPLETION_INDEX": "1", "AWS_BATCH_JOB_ARRAY_INDEX": "2"}, verify.Shard{Index: 1, Count: 3}, ""},
		{"auto/3", nil, verify.Shard{}, "none of"},
		{"auto/2", env, verify.Shard{}, "index"},
		{"4/4", nil, verify.Shard{}, "index"},
		{"-1/4", nil, verify.Shard{}, "index"},
		{"1/0", nil, verify.Shard{}, "N must be"},
		{"1/65537", nil, verify.Shard{}, "N must be"},
		{"3", nil, verify.Shard{}, "want I/N"},
	} {
		t.Run(c.spec, func(t *testing.T) {
			got, err := verify.ParseShard(c.spec, func(k string) string { return c.env[k] })
			switch {
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("got %+v, %v; want %+v", got, err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("error %v, want one saying %q", err, c.err)
			}
		})
	}
}

// TestStateFreshness: a chunk is fresh for ReverifyAfter after it was
// verified, on the clock the caller passes; forgotten, it is stale; the
// state file keeps the fresh entries only, and is refused (ErrBadState)
// when damaged or written for another store.
func TestStateFreshness(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	ds := digests(3)
	for _, c := range []struct {
		name    string
		after   time.Duration // ReverifyAfter
		age     time.Duration // since verified
		enc     bool          // looked up as encrypted (recorded plain)
		wantNew bool
	}{
		{"just-verified", time.Hour, 0, false, true},
		{"young", time.Hour, 59 * time.Minute, false, true},
		{"expired", time.Hour, time.Hour, false, false},
		{"old", time.Hour, 48 * time.Hour, false, false},
		{"no-reverify-after", 0, 0, false, false},
		{"other-crypt-mode", time.Hour, 0, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := verify.NewState("store", c.after)
			s.Verified(ds[0], 4096, false, t0)
			if got := s.Fresh(ds[0], 4096, c.enc, t0.Add(c.age)); got != c.wantNew {
				t.Errorf("fresh = %v, want %v", got, c.wantNew)
			}
		})
	}
	var nilState *verify.State
	if nilState.Fresh(ds[0], 1, false, t0) || nilState.Len() != 0 {
		t.Error("a nil state has fresh chunks")
	}

	s := verify.NewState("store", time.Hour)
	s.Verified(ds[0], 4096, false, t0)
	s.Verified(ds[1], 4096, true, t0.Add(-2*time.Hour)) // expired by t0
	s.Verified(ds[2], 100, false, t0)
	s.Forget(ds[2], 100, false)
	if s.Fresh(ds[2], 100, false, t0) {
		t.Error("a forgotten chunk is fresh")
	}
	var file bytes.Buffer
	if _, err := s.WriteTo(&file, t0); err != nil {
		t.Fatal(err)
	}
	raw := file.Bytes()
	back, err := verify.ReadState(bytes.NewReader(raw), int64(len(raw)), "store", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != 1 || !back.Fresh(ds[0], 4096, false, t0.Add(time.Minute)) || back.Fresh(ds[1], 4096, true, t0) {
		t.Errorf("read back %d entries, want only the fresh chunk", back.Len())
	}
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 1
	for _, c := range []struct {
		name  string
		raw   []byte
		store string
	}{
		{"other-store", raw, "another store"},
		{"flipped", flipped, "store"},
		{"truncated", raw[:len(raw)-1], "store"},
		{"empty", nil, "store"},
	} {
		if _, err := verify.ReadState(bytes.NewReader(c.raw), int64(len(c.raw)), c.store, time.Hour); !errors.Is(err, verify.ErrBadState) {
			t.Errorf("%s: error %v, want ErrBadState", c.name, err)
		}
	}
}

// TestMergeShards: the reports of all N shards merge into the report of
// one unsharded run (each chunk counted once, a damaged one listed once,
// OK as the whole); some of the shards merge into a report that is not
// OK; reports of different runs are refused.
func TestMergeShards(t *testing.T) {
	store, snaps, ds := sharedStore(t, nil)
	bad := ds[snaps[1].String()][2]
	fixture.FlipByte(t, fixture.ChunkPath(store, bad), -1)
	whole, err := verify.New(fixture.OpenStore(t, store), verify.Options{}).Run(context.Background(), snaps, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	var reps []verify.Report
	for i := range n {
		sh := verify.Shard{Index: i, Count: n}
		rep, err := verify.New(fixture.OpenStore(t, store), verify.Options{Shard: sh}).Run(context.Background(), snaps, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep.Shard = sh.String()
		reps = append(reps, rep)
	}
	m, err := verify.Merge(reps)
	if err != nil {
		t.Fatal(err)
	}
	if m.OK || m.ChunksChecked != whole.ChunksChecked || m.DamagedChunks != whole.DamagedChunks || m.Shard != "" {
		t.Errorf("merged: ok %v, %d checked, %d damaged, shard %q; the whole run: %d checked, %d damaged", m.OK, m.ChunksChecked, m.DamagedChunks, m.Shard, whole.ChunksChecked, whole.DamagedChunks)
	}
	partial, err := verify.Merge(reps[:2])
	if err != nil {
		t.Fatal(err)
	}
	if partial.OK || partial.ChunksChecked >= whole.ChunksChecked || !strings.Contains(partial.Shard, "/3") {
		t.Errorf("two of three shards: ok %v, %d checked, shard %q; want not OK, fewer chunks, the shards named", partial.OK, partial.ChunksChecked, partial.Shard)
	}
	for _, c := range []struct {
		name   string
		change func(r *verify.Report)
		want   string
	}{
		{"other-version", func(r *verify.Report) { r.Version++ }, "version"},
		{"other-store", func(r *verify.Report) { r.Store = "elsewhere" }, "store"},
		{"other-namespaces", func(r *verify.Report) { r.Namespaces = []string{"ns1"} }, "namespaces"},
		{"other-count", func(r *verify.Report) { r.Shard = "1/4" }, ""},
		{"same-shard-twice", func(r *verify.Report) { r.Shard = reps[0].Shard }, ""},
		{"days-apart", func(r *verify.Report) {
			at, _ := time.Parse(time.RFC3339, reps[0].Started)
			r.Started = at.Add(-72 * time.Hour).Format(time.RFC3339)
		}, "started"},
	} {
		t.Run(c.name, func(t *testing.T) {
			odd := reps[1]
			c.change(&odd)
			if _, err := verify.Merge([]verify.Report{reps[0], odd, reps[2]}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("merged reports of different runs: %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// TestParseAge: --reverify-after ages with a day unit.
func TestParseAge(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"12h", 12 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"-1h", 0, false},
		{"xd", 0, false},
		{"99999d", 0, false},
		{"soon", 0, false},
	} {
		got, err := verify.ParseAge(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestStateFrom: a state not there starts empty without a word; a damaged
// one starts empty and says why.
func TestStateFrom(t *testing.T) {
	st, ignored := verify.StateFrom(nil, fmt.Errorf("state: %w", chunkstore.ErrNotFound), "s", time.Hour)
	if st == nil || st.Len() != 0 || ignored != nil {
		t.Errorf("missing state: %v, %v", st, ignored)
	}
	st, ignored = verify.StateFrom([]byte("junk"), nil, "s", time.Hour)
	if st == nil || st.Len() != 0 || !errors.Is(ignored, verify.ErrBadState) {
		t.Errorf("damaged state: %v, %v", st, ignored)
	}
}
