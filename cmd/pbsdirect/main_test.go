package main

import (
	"os"
	"testing"
)

// TestMain points the user config directory at an empty temporary one, so
// that a default key file (~/.config/proxmox-backup/encryption-key.json) on
// the machine running the tests never changes what they do.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pbsdirect-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
