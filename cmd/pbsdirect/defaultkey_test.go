package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
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
