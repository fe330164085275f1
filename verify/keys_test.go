package verify_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestVerifyTwoKeys: a store with snapshots under two keys and a plain one
// verifies in one run with both key files, each opened once; with one key
// file missing, the snapshots of that key are key-missing (their
// fingerprint named, not damage, nothing outside the data) and the others
// are still verified; a merge of shards carries the status through, exit
// code 3.
func TestVerifyTwoKeys(t *testing.T) {
	kA, ccA := fixture.Key(t, 31)
	kB, ccB := fixture.Key(t, 32)
	store := fixture.NewStore(t)
	src := t.TempDir()
	snaps := map[string]index.Snapshot{
		"plain": fixture.Snap(t, "", "vm", "100", fixture.T0),
		"a":     fixture.Snap(t, "", "vm", "200", fixture.T0),
		"b":     fixture.Snap(t, "", "vm", "300", fixture.T0),
		"b2":    fixture.Snap(t, "", "ct", "300", fixture.T0),
	}
	key := map[string]*crypto.Config{"a": ccA, "b": ccB, "b2": ccB}
	var all []index.Snapshot
	for name, s := range snaps {
		img := fixture.WriteFile(t, src, name+".raw", fixture.Mixed(5*cs, uint64(len(name))))
		fixture.Backup(t, store, s, backup.Options{ChunkSize: cs, Key: key[name], SignOnly: name == "b2"}, backup.Source{Name: "drive-scsi0.img", Path: img})
		all = append(all, s)
	}
	kd := t.TempDir()
	fileA := fixture.KeyFile(t, kd, "a.json", kA, crypto.KDFPBKDF2, "pw-for-tests")
	fileB := fixture.KeyFile(t, kd, "b.json", kB, crypto.KDFPBKDF2, "pw-for-tests")
	run := func(t *testing.T, files []string, sh verify.Shard) (verify.Report, *verify.Verifier, map[string]int) {
		t.Helper()
		var mu sync.Mutex
		asked := map[string]int{}
		ks, err := snapshot.NewKeys(context.Background(), snapshot.KeyOptions{Files: files, Fingerprint: keys.Fingerprint,
			Open: func(ctx context.Context, path string) (*crypto.Config, error) {
				return keys.Open(ctx, path, func() ([]byte, error) {
					mu.Lock()
					defer mu.Unlock()
					asked[path]++
					return []byte("pw-for-tests"), nil
				})
			}})
		if err != nil {
			t.Fatal(err)
		}
		v := verify.New(fixture.OpenStore(t, store), verify.Options{Keys: ks, Shard: sh})
		rep, err := v.Run(context.Background(), all, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep, v, asked
	}

	t.Run("both keys", func(t *testing.T) {
		rep, _, asked := run(t, []string{fileA, fileB}, verify.Shard{})
		if !rep.OK || rep.WithoutKey != 0 || len(rep.Snapshots) != 4 {
			t.Errorf("report: ok %v, %d without key, %d snapshots; want all 4 verified", rep.OK, rep.WithoutKey, len(rep.Snapshots))
		}
		if asked[fileA] != 1 || asked[fileB] != 1 {
			t.Errorf("passphrases asked %v, want one per key file", asked)
		}
	})

	t.Run("key B missing", func(t *testing.T) {
		rep, v, asked := run(t, []string{fileA}, verify.Shard{})
		if rep.OK || rep.WithoutKey != 2 || rep.Damaged() != 0 || v.Outside() != nil {
			t.Errorf("report: ok %v, %d without key, %d damaged, outside %v; want 2 without key, none damaged", rep.OK, rep.WithoutKey, rep.Damaged(), v.Outside())
		}
		for _, r := range rep.Snapshots {
			b := r.Snapshot == snaps["b"].String() || r.Snapshot == snaps["b2"].String()
			switch {
			case b && (r.Status != snapshot.KeyMissing || r.KeyFingerprint != ccB.Fingerprint().String() || len(r.Archives) != 0):
				t.Errorf("%s: status %q, fingerprint %q, %d archives; want key-missing, %s", r.Snapshot, r.Status, r.KeyFingerprint, len(r.Archives), ccB.Fingerprint())
			case !b && (!r.OK || r.Status != ""):
				t.Errorf("%s: %+v, want verified", r.Snapshot, r)
			}
		}
		if len(asked) != 1 || asked[fileA] != 1 {
			t.Errorf("passphrases asked %v, want key A's only", asked)
		}
		// The JSON carries the status; a merge of the shards keeps it.
		var shards []verify.Report
		for i := range 2 {
			r, _, _ := run(t, []string{fileA}, verify.Shard{Index: i, Count: 2})
			r.Shard = verify.Shard{Index: i, Count: 2}.String()
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back verify.Report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			shards = append(shards, back)
		}
		m, err := verify.Merge(shards)
		if err != nil {
			t.Fatal(err)
		}
		if m.WithoutKey != 2 || m.Damaged() != 0 || m.ExitCode != 3 {
			t.Errorf("merged: %d without key, %d damaged, exit %d; want 2, 0, 3", m.WithoutKey, m.Damaged(), m.ExitCode)
		}
		for _, r := range m.Snapshots {
			if r.Snapshot == snaps["b"].String() && (r.Status != snapshot.KeyMissing || r.KeyFingerprint != ccB.Fingerprint().String()) {
				t.Errorf("merged %s: status %q, fingerprint %q", r.Snapshot, r.Status, r.KeyFingerprint)
			}
		}
	})
}
