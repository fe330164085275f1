package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestDefaultKeyFile: like proxmox-backup-client, a key created at the
// default path encrypts backups and opens restores without --keyfile;
// --crypt-mode none still writes a plain backup.
func TestDefaultKeyFile(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	mustOK(t, "key", "create", "--kdf", "none")
	if _, err := os.Stat(filepath.Join(cfg, "proxmox-backup", "encryption-key.json")); err != nil {
		t.Fatalf("default key file not created: %v", err)
	}
	data := zeroMiddle(21)

	store := fixture.NewStore(t)
	backupImage(t, store, data)
	m := fixture.Manifest(t, store, fixture.Snap(t, "", "vm", "100", fixture.T0))
	if got := string(m.Files[0].CryptMode); got != "encrypt" {
		t.Fatalf("backup with a default key: crypt mode %q, want encrypt", got)
	}
	out := filepath.Join(t.TempDir(), "r.raw")
	r := mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", out)
	if !strings.Contains(r.err, "default key file") {
		t.Errorf("the default key's use should be said on stderr: %v", r)
	}
	fixture.Equal(t, out, data)

	plain := fixture.NewStore(t)
	backupImage(t, plain, data, "--crypt-mode", "none")
	m = fixture.Manifest(t, plain, fixture.Snap(t, "", "vm", "100", fixture.T0))
	if got := string(m.Files[0].CryptMode); got != "none" {
		t.Fatalf("--crypt-mode none: crypt mode %q", got)
	}
}

// TestDefaultKeyOnlyWhenNeeded: with a passphrase-protected default key file
// present and no passphrase in the environment, plain snapshots restore,
// drill and verify without touching the key; verify --crc-only checks an
// encrypted snapshot without it; --crypt-mode none opts out of the default
// key; an encrypted snapshot asks for the passphrase and restores with it.
func TestDefaultKeyOnlyWhenNeeded(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	key, _ := fixture.Key(t, 5)
	if err := os.MkdirAll(filepath.Join(cfg, "proxmox-backup"), 0o700); err != nil {
		t.Fatal(err)
	}
	def := fixture.KeyFile(t, filepath.Join(cfg, "proxmox-backup"), "encryption-key.json", key, crypto.KDFPBKDF2, "s3cret")
	t.Setenv("PBS_ENCRYPTION_PASSWORD_FILE", "")
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD_FILE")
	data := zeroMiddle(23)
	store := fixture.NewStore(t)
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "s3cret")
	backupImage(t, store, data, "--crypt-mode", "none")
	const encTime = "2026-11-29T11:00:00Z"
	backupImage(t, store, data, "--backup-time", encTime, "--keyfile", def)
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD")
	encSnap := "vm/100/" + encTime

	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"restore-plain", []string{"restore", "--store", store, snap0, "drive-scsi0", filepath.Join(dir, "a.raw")}},
		{"drill-plain", []string{"drill", "--store", store, snap0, "drive-scsi0", filepath.Join(dir, "b.raw")}},
		{"verify-plain", []string{"verify", "--store", store, snap0}},
		{"verify-crc-only-encrypted", []string{"verify", "--crc-only", "--store", store, encSnap}},
		{"restore-plain-crypt-mode-none", []string{"restore", "--crypt-mode", "none", "--store", store, snap0, "drive-scsi0", filepath.Join(dir, "c.raw")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mustOK(t, c.args...)
			if strings.Contains(r.err, "default key file") {
				t.Errorf("the default key was opened: %v", r)
			}
		})
	}
	fixture.Equal(t, filepath.Join(dir, "a.raw"), data)

	t.Run("encrypted-crypt-mode-none", func(t *testing.T) {
		r := mustFail(t, 1, []string{"encrypted"}, "restore", "--crypt-mode", "none", "--store", store, encSnap, "drive-scsi0", filepath.Join(dir, "d.raw"))
		if strings.Contains(r.err, "passphrase") || strings.Contains(r.err, "default key file") {
			t.Errorf("--crypt-mode none still opened the default key: %v", r)
		}
		noFile(t, filepath.Join(dir, "d.raw"))
	})
	t.Run("crypt-mode-none-and-keyfile", func(t *testing.T) {
		mustFail(t, 2, []string{"--crypt-mode none"}, "restore", "--crypt-mode", "none", "--keyfile", def, "--store", store, snap0, "drive-scsi0", filepath.Join(dir, "e.raw"))
	})
	t.Run("encrypted-needs-passphrase", func(t *testing.T) {
		mustFail(t, 2, []string{"default key file", "PBS_ENCRYPTION_PASSWORD"}, "restore", "--store", store, encSnap, "drive-scsi0", filepath.Join(dir, "f.raw"))
		// verify reports the snapshot whose key it could not open as not
		// verified for want of its key (status key-error, exit 3: no
		// damage), naming the sources.
		if r := mustFail(t, 3, []string{"not verified"}, "verify", "--store", store, encSnap); !strings.Contains(r.out, "key error") || !strings.Contains(r.out, "PBS_ENCRYPTION_PASSWORD") {
			t.Errorf("verify does not say the key error and the passphrase sources: %v", r)
		}
		noFile(t, filepath.Join(dir, "f.raw"))
		t.Setenv("PBS_ENCRYPTION_PASSWORD", "s3cret")
		r := mustOK(t, "restore", "--store", store, encSnap, "drive-scsi0", filepath.Join(dir, "f.raw"))
		if !strings.Contains(r.err, "default key file") {
			t.Errorf("the default key's use should be said on stderr: %v", r)
		}
		fixture.Equal(t, filepath.Join(dir, "f.raw"), data)
	})
	// The default key failing to open (a wrong passphrase) fails the
	// encrypted snapshot only: the plain one verified after it is ok.
	t.Run("wrong-passphrase-plain-still-ok", func(t *testing.T) {
		const plainAfter = "vm/100/2026-11-29T12:00:00Z" // verified after the encrypted one
		backupImage(t, store, data, "--backup-time", "2026-11-29T12:00:00Z", "--crypt-mode", "none")
		t.Setenv("PBS_ENCRYPTION_PASSWORD", "wrong")
		r := pbs(t, "verify", "--parallel", "1", "--output-format", "json", "--store", store, "vm/100")
		var rep verify.Report
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("%v: %v", err, r)
		}
		got := map[string]bool{}
		for _, s := range rep.Snapshots {
			got[s.Snapshot] = s.OK
		}
		if len(got) != 3 || !got[snap0] || got[encSnap] || !got[plainAfter] {
			t.Errorf("verify with a wrong passphrase: %v; want %s and %s ok, %s failed", got, snap0, plainAfter, encSnap)
		}
	})
}
