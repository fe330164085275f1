package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestTimingFromKeyOpened: a restore's seconds (and so its MiB/s) and a
// drill's time to restore leave out opening an scrypt key file (about a
// second of key derivation), which dwarfs the restore of a small image.
func TestTimingFromKeyOpened(t *testing.T) {
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "timing-pw")
	keyfile := filepath.Join(t.TempDir(), "scrypt.json")
	mustOK(t, "key", "create", "--kdf", "scrypt", keyfile)
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(5), "--keyfile", keyfile)
	for _, cmd := range []string{"restore", "drill"} {
		t.Run(cmd, func(t *testing.T) {
			start := time.Now()
			r := mustOK(t, cmd, "--output-format", "json", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw"))
			wall := time.Since(start).Seconds()
			var v struct {
				Seconds        float64 `json:"seconds"`
				RestoreSeconds float64 `json:"time-to-restore-seconds"`
			}
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatalf("%v: %s", err, r.out)
			}
			got := max(v.Seconds, v.RestoreSeconds)
			if got <= 0 || got > wall/2 {
				t.Errorf("%s took %.3fs with the key opening, reports %.3fs: want the opening (most of it) left out", cmd, wall, got)
			}
		})
	}
}
