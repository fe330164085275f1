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

// TestKeyCandidatesDir: a key directory holding an old copy of a key under
// its former passphrase (before key change-passphrase) besides the key
// file, named first, verifies with the new passphrase; so does one holding
// a file that claims the key's fingerprint but is another key. When no
// file claiming the key opens, every one is named with why, exit 3, and
// the JSON report calls nothing damage. Key file names from the directory
// are escaped in the notes.
func TestKeyCandidatesDir(t *testing.T) {
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "new-passphrase")
	kB, ccB := fixture.Key(t, 52)
	kC, _ := fixture.Key(t, 53)
	store := fixture.NewStore(t)
	snap, err := index.ParseSnapshotRef("vm/102/" + t0str)
	if err != nil {
		t.Fatal(err)
	}
	img := fixture.WriteFile(t, t.TempDir(), "b.raw", fixture.Mixed(192<<10, 5))
	fixture.Backup(t, store, snap, backup.Options{ChunkSize: 64 << 10, Key: ccB}, backup.Source{Name: "drive-scsi0.img", Path: img})

	kd := t.TempDir()
	old := fixture.KeyFile(t, kd, "b-old.key", kB, crypto.KDFPBKDF2, "old-passphrase")
	fixture.KeyFile(t, kd, "b.key", kB, crypto.KDFPBKDF2, "new-passphrase")
	t.Run("old copy under the former passphrase", func(t *testing.T) {
		mustOK(t, "verify", "--store", store, "--keyfile", kd)
		mustOK(t, "restore", "--store", store, "--keyfile", kd, snap.String(), "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
	})

	// A file of key C claiming key B's fingerprint, named before b.key.
	hostile := t.TempDir()
	lyingKeyFile(t, hostile, "a-liar.key", kC, "new-passphrase", ccB.Fingerprint())
	fixture.KeyFile(t, hostile, "b.key", kB, crypto.KDFPBKDF2, "new-passphrase")
	t.Run("a file claiming the key's fingerprint", func(t *testing.T) {
		mustOK(t, "verify", "--store", store, "--keyfile", hostile)
	})

	t.Run("no candidate opens", func(t *testing.T) {
		t.Setenv("PBS_ENCRYPTION_PASSWORD", "wrong-passphrase")
		both := t.TempDir()
		oldCopy := filepath.Join(both, "b-old.key")
		raw, _ := os.ReadFile(old)
		os.WriteFile(oldCopy, raw, 0o600)
		// Opens under this passphrase, and is not key B.
		lying := lyingKeyFile(t, both, "c.key", kC, "wrong-passphrase", ccB.Fingerprint())
		r := pbs(t, "verify", "--store", store, "--keyfile", both)
		for _, w := range []string{oldCopy + ": wrong passphrase", lying + ": key file contains wrong fingerprint", "not the key it names"} {
			if !strings.Contains(r.out+r.err, w) {
				t.Errorf("%q not said: %v", w, r)
			}
		}
		if r.code != 3 || strings.Contains(r.out, "FAILED") {
			t.Errorf("want exit 3 and no damage: %v", r)
		}
		r = pbs(t, "verify", "--store", store, "--keyfile", both, "--output-format", "json")
		var rep struct {
			ExitCode  int `json:"exit-code"`
			Snapshots []struct {
				Status            string `json:"status"`
				PassphraseRefused bool   `json:"passphrase-refused"`
				Error             string `json:"error"`
			} `json:"snapshots"`
		}
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("JSON: %v: %v", err, r)
		}
		if r.code != 3 || rep.ExitCode != 3 || len(rep.Snapshots) != 1 || rep.Snapshots[0].Status != "key-error" || !rep.Snapshots[0].PassphraseRefused ||
			!strings.Contains(rep.Snapshots[0].Error, oldCopy) || !strings.Contains(rep.Snapshots[0].Error, lying) {
			t.Errorf("want exit 3, key-error naming both files: %v", r)
		}
		if strings.Contains(r.out, `"error-is-damage":true`) || strings.Contains(r.out, `"damaged-chunks":[`) {
			t.Errorf("a refused passphrase is no damage: %v", r)
		}
		// One key file, opened before the work: no damage either.
		r = pbs(t, "verify", "--store", store, "--keyfile", oldCopy, "--output-format", "json")
		if r.code != 3 || !strings.Contains(r.out, `"exit-code":3`) || strings.Contains(r.out, `"error-is-damage":true`) || strings.Contains(r.out, `"damaged-chunks":[`) {
			t.Errorf("one key file, wrong passphrase: want exit 3 and no damage: %v", r)
		}
	})

	t.Run("names from the directory are escaped", func(t *testing.T) {
		esc := t.TempDir()
		fixture.KeyFile(t, esc, "b.key", kB, crypto.KDFPBKDF2, "new-passphrase")
		os.WriteFile(filepath.Join(esc, "notes\x1b[2J.txt"), []byte("not a key"), 0o600)
		r := mustOK(t, "verify", "--store", store, "--keyfile", esc)
		if strings.Contains(r.out+r.err, "\x1b") || !strings.Contains(r.err, `notes\x1b[2J.txt: not a key file`) {
			t.Errorf("the skipped name is not escaped: %q", r.err)
		}
	})
}

// lyingKeyFile writes key k as a key file name in dir under pass, its
// fingerprint field claiming fp, and returns its path.
func lyingKeyFile(t *testing.T, dir, name string, k [crypto.KeySize]byte, pass string, fp crypto.Fingerprint) string {
	t.Helper()
	path := fixture.KeyFile(t, dir, name, k, crypto.KDFPBKDF2, pass)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kf, err := crypto.ParseKeyFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	kf.Fingerprint = fp.String()
	data, err := kf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
