package main

import (
	"os"
	"runtime"
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

// TestSpareProcs: GOMAXPROCS doubles unless the GOMAXPROCS variable sets it.
func TestSpareProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	for _, c := range []struct {
		env  string
		want int
	}{
		{"", 2 * prev},
		{"3", prev},
	} {
		runtime.GOMAXPROCS(prev)
		t.Setenv("GOMAXPROCS", c.env)
		spareProcs()
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("GOMAXPROCS=%q: %d Ps, want %d", c.env, got, c.want)
		}
	}
}
