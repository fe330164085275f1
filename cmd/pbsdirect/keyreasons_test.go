package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestKeyErrorNamesEachFile: of two key files claiming a snapshot's key,
// one (named first) opening under the passphrase as another key and one
// (the real key) refusing it, the summary names each with its own reason
// — not "the passphrase was refused" for the first — and the JSON report
// lists both in key-files, key-file naming the refused one.
func TestKeyErrorNamesEachFile(t *testing.T) {
	kB, ccB := fixture.Key(t, 62)
	kA, _ := fixture.Key(t, 63)
	store := fixture.NewStore(t)
	snap, err := index.ParseSnapshotRef("vm/301/" + t0str)
	if err != nil {
		t.Fatal(err)
	}
	img := fixture.WriteFile(t, t.TempDir(), "b.raw", fixture.Mixed(128<<10, 7))
	fixture.Backup(t, store, snap, backup.Options{ChunkSize: 64 << 10, Key: ccB}, backup.Source{Name: "drive-scsi0.img", Path: img})
	kd := t.TempDir()
	hostile := lyingKeyFile(t, kd, "aa-hostile.key", kA, "passAA", ccB.Fingerprint())
	real := fixture.KeyFile(t, kd, "zz.key", kB, crypto.KDFPBKDF2, "passBB")
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "passAA")

	r := pbs(t, "verify", "--store", store, "--keyfile", kd)
	last := strings.TrimSpace(r.err)
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	for _, w := range []string{"the passphrase was refused for " + real, hostile + " is not the key it names", "retry with the right passphrase"} {
		if !strings.Contains(last, w) {
			t.Errorf("last line lacks %q: %q", w, last)
		}
	}
	if strings.Contains(last, "refused for "+hostile) || r.code != 3 {
		t.Errorf("want exit 3, the refusal not put on %s: %v", hostile, r)
	}

	r = pbs(t, "verify", "--store", store, "--keyfile", kd, "--output-format", "json")
	var rep struct {
		Snapshots []struct {
			KeyFile  string `json:"key-file"`
			KeyFiles []struct {
				File, Reason string
			} `json:"key-files"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || len(rep.Snapshots) != 1 {
		t.Fatalf("JSON: %v: %v", err, r)
	}
	s := rep.Snapshots[0]
	if s.KeyFile != real || len(s.KeyFiles) != 2 || s.KeyFiles[0].File != hostile || s.KeyFiles[0].Reason != "not-the-key-it-names" ||
		s.KeyFiles[1].File != real || s.KeyFiles[1].Reason != "passphrase-refused" {
		t.Errorf("key-file %q, key-files %+v", s.KeyFile, s.KeyFiles)
	}
}
