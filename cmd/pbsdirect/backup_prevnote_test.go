package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBackupNotesUnusablePrevious: when the group's previous snapshot
// cannot be counted on (its index damaged or missing, its manifest
// damaged), the backup still succeeds, asking the store for every chunk,
// and says on stderr which snapshot it could not use and why; with a good
// previous snapshot it says nothing of the kind.
func TestBackupNotesUnusablePrevious(t *testing.T) {
	data := fixture.Build(43, fixture.Region{Kind: fixture.Random, Len: 256 << 10})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	const prevSnap = "vm/100/" + t0str
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, snapDir string)
		want   []string // on stderr; nil: no note
	}{
		{"good", func(*testing.T, string) {}, nil},
		{"index-damaged", func(t *testing.T, dir string) { fixture.FlipByte(t, filepath.Join(dir, "drive-scsi0.img.fidx"), -1) },
			[]string{"note: previous snapshot " + prevSnap + " not used", "index drive-scsi0.img.fidx missing or damaged"}},
		{"index-missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "drive-scsi0.img.fidx")) },
			[]string{"note: previous snapshot " + prevSnap + " not used", "index drive-scsi0.img.fidx"}},
		{"manifest-damaged", func(t *testing.T, dir string) { fixture.FlipByte(t, filepath.Join(dir, "index.json.blob"), -1) },
			[]string{"note: previous snapshot " + prevSnap + " not used", "manifest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := fixture.NewStore(t)
			args := func(when string) []string {
				return []string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", when,
					"--chunk-size", "64", "drive-scsi0.img:" + img}
			}
			mustOK(t, args(t0str)...)
			c.damage(t, filepath.Join(store, "vm", "100", t0str))
			r := mustOK(t, args("2026-11-29T11:00:00Z")...)
			if c.want == nil {
				if strings.Contains(r.err, "previous snapshot") {
					t.Errorf("note with a good previous snapshot:\n%s", r.err)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.err)
				}
			}
		})
	}
}
