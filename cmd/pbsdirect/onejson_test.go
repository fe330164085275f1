package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// textOnlyCommands print what is not a result in any output format, as
// README.md says: key paperkey prints the paper key itself.
var textOnlyCommands = []string{"key paperkey"}

// leafCommands returns the names of the commands of specs that run
// ("key create"), prefixed with prefix.
func leafCommands(prefix string, specs []commandSpec) []string {
	var out []string
	for _, s := range specs {
		name := strings.TrimSpace(prefix + " " + strings.Fields(s.use)[0])
		if s.build != nil {
			out = append(out, name)
		}
		out = append(out, leafCommands(name, s.sub)...)
	}
	return out
}

// TestOneJSONValue: in a JSON output format every command prints exactly
// one JSON value on stdout, whether it succeeds or fails: fleet drills
// (which printed a line per archive and a summary) included. Every command
// of the tree has a case, or is one of textOnlyCommands.
func TestOneJSONValue(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "key.json")
	img := fixture.WriteFile(t, dir, "new.raw", fixture.Build(3, fixture.Region{Kind: fixture.Random, Len: 2 * fleetCS}))
	snap := f.snaps[0].String()
	cases := []struct {
		command string
		args    []string
	}{
		{"version", nil},
		{"snapshots", []string{"--store", f.store, "--all-namespaces"}},
		{"snapshots", []string{"--store", f.store, "no/such/group"}},
		{"groups", []string{"--store", f.store}},
		{"namespaces", []string{"--store", f.store}},
		{"datastores", []string{filepath.Dir(f.store)}},
		{"verify", []string{"--store", f.store, "--all-namespaces"}},
		{"verify", []string{"--store", f.store, "--max-depth", "9"}},
		{"restore", []string{"--store", f.store, snap, "drive-scsi0", filepath.Join(dir, "r.raw")}},
		{"restore", []string{"--store", f.store, snap, "drive-scsi9", filepath.Join(dir, "r9.raw")}},
		{"restore-guest", []string{"--store", f.store, snap, filepath.Join(dir, "guest")}},
		{"mount", []string{"--store", f.store}},
		{"serve-nbd", []string{"--store", f.store}},
		{"drill", []string{"--store", f.store, snap, "drive-scsi0", filepath.Join(dir, "d.raw"), "--remove"}},
		{"drill", []string{"--store", f.store, "--scratch", t.TempDir(), "--all-namespaces", "--parallel", "2"}},
		{"drill", []string{"--store", f.store, "--scratch", t.TempDir(), "--ns", "nowhere"}},
		{"boot-check", []string{"--store", f.store}},
		{"boot-check", []string{"--store", f.store, "--boot-timeout", "30s", "--boot-output", dir, snap}},
		{"backup", []string{"--store", f.store, "--backup-type", "vm", "--backup-id", "777", "drive-scsi0.img:" + img}},
		{"key create", []string{"--kdf", "none", key}},
		{"key show", []string{key}},
		{"key change-passphrase", []string{"--kdf", "none", filepath.Join(dir, "none.json")}},
		{"key create-master-key", []string{"--no-such-flag"}},
		{"key import-with-master-key", nil},
		{"report merge", []string{filepath.Join(dir, "missing.json")}},
		{"repair", []string{"--store", f.store}},
		{"catalog dump", []string{"--store", f.store, snap}},
		{"man", nil},
	}
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json")
	covered := slices.Clone(textOnlyCommands)
	for _, c := range cases {
		covered = append(covered, c.command)
		args := append(strings.Fields(c.command), c.args...)
		t.Run(strings.Join(args[:min(len(args), 3)], " "), func(t *testing.T) {
			r := pbs(t, args...)
			dec := json.NewDecoder(strings.NewReader(r.out))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("stdout is not a JSON value: %v: %v", err, r)
			}
			if _, err := dec.Token(); err != io.EOF {
				t.Fatalf("more than one JSON value on stdout (%v): %v", err, r)
			}
			if obj, ok := v.(map[string]any); ok && obj["exit-code"] != float64(r.code) && (r.code != 0 || obj["exit-code"] != nil) {
				t.Errorf("exit-code %v, the process exits %d: %v", obj["exit-code"], r.code, r)
			}
		})
	}
	for _, name := range leafCommands("", commandSpecs()) {
		if !slices.Contains(covered, name) {
			t.Errorf("%s has no case: add one (or, if its output is no result, to textOnlyCommands and README.md)", name)
		}
	}
}
