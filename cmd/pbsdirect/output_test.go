package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// jsonResult parses stdout as exactly one JSON value on one line (json) or
// indented over several (json-pretty).
func jsonResult(t *testing.T, r result, pretty bool) map[string]any {
	t.Helper()
	out := strings.TrimSuffix(r.out, "\n")
	if lines := strings.Count(out, "\n"); (lines == 0) == pretty || strings.HasSuffix(out, "\n") {
		t.Fatalf("want %s JSON on stdout: %v", map[bool]string{true: "indented", false: "one-line"}[pretty], r)
	}
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(r.out))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not one JSON object: %v: %v", err, r)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout: %v", r)
	}
	return v
}

// TestOutputFormats: json is one line, json-pretty is indented, both carry
// ok and exit-code, PROXMOX_OUTPUT_FORMAT sets the default and the flag wins.
func TestOutputFormats(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(41)
	backupImage(t, store, data)
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		env    string
		args   []string
		pretty bool
	}{
		{"version-json", "", []string{"version", "--output-format", "json"}, false},
		{"version-pretty", "", []string{"version", "--output-format=json-pretty"}, true},
		{"version-env", "json-pretty", []string{"version"}, true},
		{"version-flag-over-env", "json-pretty", []string{"version", "--output-format", "json"}, false},
		{"restore-json", "", []string{"restore", "--output-format", "json", "--store", store, snap0, "drive-scsi0", filepath.Join(dir, "a.raw")}, false},
		{"restore-pretty", "", []string{"restore", "--output-format", "json-pretty", "--store", store, snap0, "drive-scsi0", filepath.Join(dir, "b.raw")}, true},
		{"verify-env", "json", []string{"verify", "--store", store}, false},
		{"key-create", "", []string{"key", "create", "--kdf", "none", "--output-format", "json-pretty", filepath.Join(dir, "k.json")}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PROXMOX_OUTPUT_FORMAT", c.env)
			r := mustOK(t, c.args...)
			v := jsonResult(t, r, c.pretty)
			if v["ok"] != true || v["exit-code"] != float64(0) || v["error"] != nil {
				t.Fatalf("want ok true, exit-code 0, no error: %v", r)
			}
		})
	}
	// A listing stays a JSON array (as PBS prints lists), in both forms.
	for _, f := range []string{"json", "json-pretty"} {
		r := mustOK(t, "snapshots", "--store", store, "--output-format", f)
		var list []snapshotEntry
		if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 1 {
			t.Fatalf("%s listing: %v: %v", f, err, r)
		}
		if (strings.Count(strings.TrimSpace(r.out), "\n") > 0) != (f == "json-pretty") {
			t.Fatalf("%s listing layout: %v", f, r)
		}
	}
	mustFail(t, 2, []string{"json-pretty"}, "snapshots", "--store", store, "--output-format", "yaml")
	v := mustOK(t, "version", "--output-format", "json")
	if !strings.Contains(v.out, `"go":"go1.`) {
		t.Fatalf("version JSON lacks the Go version: %v", v)
	}
}

// TestJSONOnFailure: in a JSON format every command that fails prints one
// JSON object on stdout with ok false, its exit code and the error.
func TestJSONOnFailure(t *testing.T) {
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(42))
	missing := filepath.Join(t.TempDir(), "nothing-here")
	out := filepath.Join(t.TempDir(), "out.raw")
	for _, c := range []struct {
		name string
		code int
		args []string
	}{
		{"restore-no-store", 3, []string{"restore", "--store", missing, snap0, "drive-scsi0", out}},
		{"restore-no-archive", 1, []string{"restore", "--store", store, snap0, "drive-nosuch", out}},
		{"restore-usage", 2, []string{"restore", "--store", store, snap0}},
		{"verify-no-store", 3, []string{"verify", "--store", missing}},
		{"verify-usage", 2, []string{"verify"}},
		{"drill-no-snapshot", 1, []string{"drill", "--store", store, "vm/999", "drive-scsi0", out}},
		{"snapshots-no-store", 3, []string{"snapshots", "--store", missing}},
		{"snapshots-bad-flag", 2, []string{"snapshots", "--store", store, "--nosuch"}},
		{"backup-no-source", 2, []string{"backup", "--store", store, "drive-scsi0.img:" + missing}},
		{"key-show-missing", 2, []string{"key", "show", missing}},
		{"key-unknown", 2, []string{"key", "nosuch"}},
		{"version-args", 2, []string{"version", "extra"}},
		{"unknown-command", 2, []string{"nosuch"}},
	} {
		for _, f := range []string{"json", "json-pretty"} {
			t.Run(c.name+"-"+f, func(t *testing.T) {
				r := pbs(t, append(c.args, "--output-format", f)...)
				if r.code != c.code {
					t.Fatalf("want exit %d: %v", c.code, r)
				}
				v := jsonResult(t, r, f == "json-pretty")
				msg, _ := v["error"].(string)
				if v["ok"] != false || v["exit-code"] != float64(c.code) || msg == "" {
					t.Fatalf("want ok false, exit-code %d and the error: %v", c.code, r)
				}
				if !bytes.Contains([]byte(r.err), []byte(msg)) && c.name != "unknown-command" {
					t.Errorf("stderr should say the same error %q: %v", msg, r)
				}
			})
		}
	}
}

// TestBuildVersion: the -ldflags version wins; without it the version comes
// from the build information (a test binary says "(devel)" or a module
// version), never "dev", with the Go version.
func TestBuildVersion(t *testing.T) {
	prev := version
	defer func() { version = prev }()
	version = "v1.2.3"
	if v := buildVersion(); v.Version != "v1.2.3" || !strings.HasPrefix(v.GoVersion, "go1.") {
		t.Fatalf("with -ldflags: %+v", v)
	}
	version = ""
	if v := buildVersion(); v.Version == "" || v.Version == "dev" || v.Platform == "" {
		t.Fatalf("from build information: %+v", v)
	}
	r := mustOK(t, "version")
	if !strings.HasPrefix(r.out, "pbsdirect ") || !strings.Contains(r.out, "go1.") {
		t.Fatalf("version text: %v", r)
	}
}

// TestEnvFormatRestoreToStdout: PROXMOX_OUTPUT_FORMAT=json, exported for
// proxmox-backup-client, does not stop a restore to standard output, and
// adds no JSON after the archive's bytes; --output-format json given with
// TARGET - is still refused.
func TestEnvFormatRestoreToStdout(t *testing.T) {
	store := fixture.NewStore(t)
	data := fixture.Mixed(1<<20+123, 7)
	backupImage(t, store, data)
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json")
	r := mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", "-")
	if r.out != string(data) {
		t.Errorf("standard output: %d bytes, want the image's %d exactly", len(r.out), len(data))
	}
	mustFail(t, 2, []string{"not with TARGET -"}, "restore", "--output-format", "json", "--store", store, snap0, "drive-scsi0", "-")
}
