package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestMessagesDamageLines: a restore, a drill and a degraded restore with
// one missing and one damaged chunk say so by kind, list the chunks on
// lines of their own (real line breaks on stderr, "\n" in the JSON
// error, never a backslash-n), and say "restored with damage" once.
func TestMessagesDamageLines(t *testing.T) {
	data := failoverImage()
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "64")
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	remove(t, chunkFile(store, ds[3]))
	flipByte(t, chunkFile(store, ds[4]))
	dir := t.TempDir()
	lines := []string{"1 damaged and 1 missing chunk(s)", "\n  chunk " + ds[3].String(), "\n  chunk " + ds[4].String()}
	for _, c := range []struct {
		name string
		args []string
		want []string
		once string
	}{
		{"restore", []string{"restore"}, lines, ""},
		{"drill", []string{"drill"}, lines, ""},
		{"degraded", []string{"restore", "--on-missing", "zero", "--on-corrupt", "zero"}, lines, "restored with damage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string(nil), c.args...), "--store", store, snap0, "drive-scsi0", filepath.Join(dir, c.name+".raw"))
			r := pbs(t, args...)
			for _, w := range c.want {
				if r.code != 1 || !strings.Contains(r.err, w) {
					t.Errorf("want exit 1 and %q on stderr: %v", w, r)
				}
			}
			if strings.Contains(r.err, `\n`) {
				t.Errorf("a literal \\n on stderr: %v", r)
			}
			if c.once != "" && strings.Count(r.err, c.once) != 1 {
				t.Errorf("%q said %d times: %v", c.once, strings.Count(r.err, c.once), r)
			}
			if c.name == "drill" {
				return // a drill's JSON is a report of its own
			}
			args = append(append([]string(nil), c.args...), "--output-format", "json", "--store", store, snap0, "drive-scsi0", filepath.Join(dir, c.name+"-json.raw"))
			r = pbs(t, args...)
			var v struct{ Error string }
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatalf("JSON: %v: %v", err, r)
			}
			for _, w := range c.want {
				if !strings.Contains(v.Error, w) {
					t.Errorf("JSON error lacks %q: %q", w, v.Error)
				}
			}
		})
	}
}
