package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestSeveralKeys: --keyfile given several times, or a directory of key
// files, verifies a store holding snapshots under two keys and plain ones
// in one run, opening only the key files needed (a key file under another
// passphrase is never asked for); with a key missing, its snapshots are
// key-missing in the text and JSON reports (their fingerprint named, exit
// 3, no damage) and the others still verified; damage elsewhere makes it
// exit 1; a restore of such a snapshot exits 3, naming the fingerprint
// and, for a signed-only one, --crypt-mode none. A passphrase refused is
// exit 3 too, naming the key files and asking for the right passphrase;
// a plain snapshot is warned of as unsigned with one key or several.
func TestSeveralKeys(t *testing.T) {
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "one-passphrase")
	kA, ccA := fixture.Key(t, 41)
	kB, ccB := fixture.Key(t, 42)
	kC, _ := fixture.Key(t, 43)
	store := fixture.NewStore(t)
	src := t.TempDir()
	snaps := []struct {
		ref      string
		cc       *crypto.Config
		signOnly bool
	}{
		{"vm/100/" + t0str, nil, false},
		{"vm/200/" + t0str, ccA, false},
		{"vm/300/" + t0str, ccB, false},
		{"ct/300/" + t0str, ccB, true},
	}
	for i, s := range snaps {
		snap, err := index.ParseSnapshotRef(s.ref)
		if err != nil {
			t.Fatal(err)
		}
		img := fixture.WriteFile(t, src, snap.Type+snap.ID+".raw", fixture.Mixed(256<<10, uint64(i)))
		fixture.Backup(t, store, snap, backup.Options{ChunkSize: 64 << 10, Key: s.cc, SignOnly: s.signOnly}, backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	kd := t.TempDir()
	fileA := fixture.KeyFile(t, kd, "a.json", kA, crypto.KDFPBKDF2, "one-passphrase")
	fileB := fixture.KeyFile(t, kd, "b.json", kB, crypto.KDFPBKDF2, "one-passphrase")
	os.WriteFile(filepath.Join(kd, "README"), []byte("the keys of both clusters"), 0o600)
	// Key C is under another passphrase: asking for it would fail.
	fileC := fixture.KeyFile(t, t.TempDir(), "c.json", kC, crypto.KDFPBKDF2, "another-passphrase")
	fpB := ccB.Fingerprint().String()

	t.Run("both keys, an unused one never opened", func(t *testing.T) {
		mustOK(t, "verify", "--store", store, "--keyfile", fileC, "--keyfile", fileA, "--keyfile", fileB)
	})
	t.Run("a directory of keys", func(t *testing.T) {
		r := mustOK(t, "verify", "--store", store, "--keyfile", kd)
		if !strings.Contains(r.err, "README: not a key file") {
			t.Errorf("the skipped file is not said: %v", r)
		}
	})
	t.Run("key B missing", func(t *testing.T) {
		r := pbs(t, "verify", "--store", store, "--keyfile", fileA, "--keyfile", fileC, "--output-format", "json")
		var rep struct {
			OK         bool `json:"ok"`
			ExitCode   int  `json:"exit-code"`
			WithoutKey int  `json:"snapshots-without-key"`
			Snapshots  []struct {
				Snapshot, Status, Error string
				OK                      bool
				KeyFingerprint          string `json:"key-fingerprint"`
			} `json:"snapshots"`
		}
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("JSON: %v: %v", err, r)
		}
		if r.code != 3 || rep.ExitCode != 3 || rep.OK || rep.WithoutKey != 2 {
			t.Fatalf("want exit 3, 2 snapshots without key: %v", r)
		}
		for _, s := range rep.Snapshots {
			b := strings.HasSuffix(s.Snapshot[:6], "/300")
			if b != (s.Status == "key-missing") || b && s.KeyFingerprint != fpB || !b && !s.OK {
				t.Errorf("%s: %+v", s.Snapshot, s)
			}
		}
		r = mustFail(t, 3, []string{"not verified", "--keyfile"}, "verify", "--store", store, "--keyfile", fileA)
		if !strings.Contains(r.out, "key missing (fingerprint "+fpB) || !strings.Contains(r.out, "vm/200/"+t0str+": ok") {
			t.Errorf("text report: %v", r)
		}
		// Exit 3 only for keys missing: no damage, the summary says so
		// rather than FAILED; the status is said once per error.
		if !strings.Contains(r.out, "2 not verified for want of their key") || !strings.Contains(r.out, ": NOT VERIFIED, no damage found") ||
			strings.Contains(r.out, "FAILED") || strings.Contains(r.out, "0 failed") || strings.Contains(r.out+r.err, "missing key (key missing") {
			t.Errorf("summary of a run without damage: %v", r)
		}
	})
	t.Run("a plain snapshot is warned of with one key or several", func(t *testing.T) {
		const warning = "the manifest of vm/100/" + t0str + " is not signed"
		for _, args := range [][]string{{"--keyfile", fileA}, {"--keyfile", fileA, "--keyfile", fileB}, {"--keyfile", kd}} {
			r := mustOK(t, append([]string{"verify", "--store", store}, append(args, "vm/100/"+t0str)...)...)
			if !strings.Contains(r.err, warning) {
				t.Errorf("%v: no warning: %v", args, r)
			}
		}
	})
	t.Run("wrong passphrase for several keys", func(t *testing.T) {
		t.Setenv("PBS_ENCRYPTION_PASSWORD", "wrong-passphrase")
		// The fix is the passphrase, not another --keyfile: exit 3.
		r := mustFail(t, 3, []string{"the passphrase was refused for", fileA, fileB, "retry with the right passphrase"},
			"verify", "--store", store, "--keyfile", fileA, "--keyfile", fileB)
		if strings.Contains(r.err, "give --keyfile with their key") || strings.Contains(r.err, "key missing") || strings.Contains(r.out, "FAILED") {
			t.Errorf("wrong advice for a refused passphrase: %v", r)
		}
		r = pbs(t, "verify", "--store", store, "--keyfile", fileA, "--keyfile", fileB, "--output-format", "json")
		if r.code != 3 || !strings.Contains(r.out, `"passphrase-refused":true`) || !strings.Contains(r.out, `"key-file":"`+fileA+`"`) {
			t.Errorf("JSON: %v", r)
		}
		// One key file, opened at once: exit 3 too.
		mustFail(t, 3, []string{fileA, "wrong passphrase", "retry with the right passphrase"}, "verify", "--store", store, "--keyfile", fileA)
		target := filepath.Join(t.TempDir(), "d.raw")
		mustFail(t, 3, []string{fileA, "wrong passphrase"}, "restore", "--store", store, "--keyfile", fileA, "vm/200/"+t0str, "drive-scsi0", target)
		mustFail(t, 3, []string{fileB, "wrong passphrase"}, "restore", "--store", store, "--keyfile", fileA, "--keyfile", fileB, "vm/300/"+t0str, "drive-scsi0", target)
		noFile(t, target)
	})
	t.Run("restore without its key", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "d.raw")
		mustFail(t, 3, []string{fpB, "--keyfile"}, "restore", "--store", store, "--keyfile", fileA, "vm/300/"+t0str, "drive-scsi0", target)
		noFile(t, target)
		mustFail(t, 3, []string{fpB, "--crypt-mode none"}, "restore", "--store", store, "--keyfile", fileA, "ct/300/"+t0str, "drive-scsi0", target)
		noFile(t, target)
		mustOK(t, "restore", "--store", store, "--keyfile", fileA, "--keyfile", fileB, "vm/300/"+t0str, "drive-scsi0", target)
	})
	t.Run("damage elsewhere decides", func(t *testing.T) {
		bad := fixture.CopyDir(t, store, t.TempDir())
		snap, _ := index.ParseSnapshotRef("vm/100/" + t0str)
		_, ds := fixture.Digests(t, fixture.SnapPath(bad, snap, "drive-scsi0.img.fidx"))
		fixture.FlipByte(t, fixture.ChunkPath(bad, ds[0]), -1)
		r := mustFail(t, 1, []string{"2 not verified for want of their key"}, "verify", "--store", bad, "--keyfile", fileA)
		if !strings.Contains(r.out, "1 failed, 2 not verified") {
			t.Errorf("summary: %v", r)
		}
	})
	t.Run("backup takes one key", func(t *testing.T) {
		mustFail(t, 2, []string{"--keyfile once"}, "backup", "--store", store, "--keyfile", fileA, "--keyfile", fileB,
			"--backup-type", "vm", "--backup-id", "900", "drive-scsi0.img:"+fixture.WriteFile(t, t.TempDir(), "x.raw", make([]byte, 4096)))
	})
}
