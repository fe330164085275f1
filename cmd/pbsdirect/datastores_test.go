package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// discoverBackup backs up a small image into store as vm/ID at time.
func discoverBackup(t *testing.T, store string, flags []string, id, time string) {
	t.Helper()
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 3))
	args := append([]string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", id, "--backup-time", time}, flags...)
	mustOK(t, append(args, "drive-scsi0.img:"+img)...)
}

// parseDatastores reads the JSON of 'datastores' into location → entry.
func parseDatastores(t *testing.T, out string) map[string]datastoreEntry {
	t.Helper()
	var rep datastoresReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("datastores JSON: %v\n%s", err, out)
	}
	m := map[string]datastoreEntry{}
	for _, d := range rep.Datastores {
		m[d.Location] = d
	}
	return m
}

// TestDatastoresBucket: in a bucket holding three datastores at different
// prefixes — a PBS 4 S3 datastore, a bucket copy of a directory datastore
// and a nested PBS 4 one — and an empty PBS 4 one (its .in-use marker
// alone), 'datastores' of the bucket finds them all with their counts; a --store naming the bucket root, a group or .cnt
// exits 3 as before and names the datastore(s) ("did you mean").
func TestDatastoresBucket(t *testing.T) {
	fixture.SkipIfShort(t)
	local := fixture.NewStore(t)
	discoverBackup(t, local, nil, "100", "2026-11-29T10:00:00Z")
	discoverBackup(t, local, nil, "101", "2026-11-29T11:00:00Z")
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "bkt", "copies", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	gcs := testenv.StartGCS(t, "gbkt")
	bktSetEnv(t, gcs.Host)
	ep := []string{"--s3-endpoint", s3.Endpoint}
	discoverBackup(t, "s3://bkt/pbs4", ep, "200", "2026-11-30T10:00:00Z")
	discoverBackup(t, "s3://bkt/site/eu/nested", ep, "300", "2026-12-01T10:00:00Z")
	discoverBackup(t, "s3://bkt/site/eu/nested", append([]string{"--ns", "prod"}, ep...), "9", "2026-12-02T10:00:00Z")

	s3.PutFile(t, "bkt", "site/new/.in-use", []byte("{}")) // a PBS 4 datastore with nothing in it yet
	r := mustOK(t, append([]string{"datastores", "s3://bkt", "--output-format", "json"}, ep...)...)
	got := parseDatastores(t, r.out)
	want := map[string][4]any{ // layout, namespaces, groups, snapshots
		"s3://bkt/copies/ds":      {"plain", 1, 2, 2},
		"s3://bkt/pbs4":           {"pbs4-s3", 1, 1, 1},
		"s3://bkt/site/eu/nested": {"pbs4-s3", 2, 2, 2},
		"s3://bkt/site/new":       {"pbs4-s3", 1, 0, 0},
	}
	if len(got) != len(want) {
		t.Errorf("found %d datastores, want %d: %s", len(got), len(want), r.out)
	}
	for loc, w := range want {
		e, ok := got[loc]
		if !ok {
			t.Errorf("%s not found: %s", loc, r.out)
			continue
		}
		if g := [4]any{e.Layout, e.Namespaces, e.Groups, e.Snapshots}; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: %v, want %v", loc, g, w)
		}
	}
	if n := got["s3://bkt/site/eu/nested"].Newest; n != "ns/prod/vm/9/2026-12-02T10:00:00Z" {
		t.Errorf("newest of nested: %q", n)
	}
	if r := mustOK(t, append([]string{"datastores", "s3://bkt"}, ep...)...); !strings.Contains(r.out, "s3://bkt/pbs4  ") || !strings.Contains(r.out, "newest") {
		t.Errorf("text table: %v", r)
	}

	for _, tc := range []struct{ store, want string }{
		{"s3://bkt", "did you mean --store s3://bkt/copies/ds (or s3://bkt/pbs4, s3://bkt/site/eu/nested, s3://bkt/site/new)?"},
		{"s3://bkt/pbs4/.cnt", "did you mean --store s3://bkt/pbs4?"},
		{"s3://bkt/pbs4/.cnt/vm/200", "did you mean --store s3://bkt/pbs4?"},
		{"s3://bkt/pbs4/vm/200", "did you mean --store s3://bkt/pbs4?"},
		{"s3://bkt/copies/ds/vm/100", "did you mean --store s3://bkt/copies/ds?"},
		{"s3://bkt/site", "did you mean --store s3://bkt/site/eu/nested (or s3://bkt/site/new)?"},
	} {
		mustFail(t, exitOutside, []string{"no PBS datastore at this prefix", tc.want}, append([]string{"snapshots", "--store", tc.store}, ep...)...)
	}
	// GCS: the same walk through the other bucket backend.
	discoverBackup(t, "gs://gbkt/x/y/pbs4", nil, "400", "2026-12-03T10:00:00Z")
	gotGS := parseDatastores(t, mustOK(t, "datastores", "gs://gbkt", "--output-format", "json").out)
	if e, ok := gotGS["gs://gbkt/x/y/pbs4"]; len(gotGS) != 1 || !ok || e.Layout != "pbs4-s3" || e.Snapshots != 1 {
		t.Errorf("datastores gs://gbkt: %v", gotGS)
	}
	mustFail(t, exitOutside, []string{"did you mean --store gs://gbkt/x/y/pbs4?"}, "snapshots", "--store", "gs://gbkt/x/y/pbs4/.cnt/vm")
	// No bucket: nothing to suggest.
	if r := mustFail(t, exitOutside, nil, append([]string{"datastores", "s3://nosuchbucket"}, ep...)...); strings.Contains(r.err, "did you mean") {
		t.Errorf("a missing bucket: %v", r)
	}
}

// TestDatastoresDir: 'datastores' of a directory tree finds the directory
// datastores, not through links, and a --store naming a parent or a
// directory inside a datastore names it.
func TestDatastoresDir(t *testing.T) {
	top := t.TempDir()
	a := filepath.Join(top, "a", "store")
	b := filepath.Join(top, "b", "c", "store")
	for _, s := range []string{a, b} {
		if err := os.MkdirAll(filepath.Join(s, ".chunks"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 3))
	fixture.Backup(t, a, fixture.Snap(t, "", "vm", "100", fixture.T0), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	if err := os.Symlink(filepath.Join(top, "a"), filepath.Join(top, "link")); err != nil {
		t.Fatal(err)
	}
	got := parseDatastores(t, mustOK(t, "datastores", top, "--output-format", "json").out)
	if len(got) != 2 || got[a].Snapshots != 1 || got[a].Layout != "directory" || got[b].Snapshots != 0 {
		t.Errorf("datastores %s: %v", top, got)
	}
	mustFail(t, exitOutside, []string{"did you mean --store " + a + "?"}, "snapshots", "--store", filepath.Join(a, "vm", "100"))
	mustFail(t, exitOutside, []string{"did you mean --store " + a + "?"}, "groups", "--store", filepath.Join(top, "a"))
	// Nothing found: exit 0, an empty list and a note.
	empty := t.TempDir()
	if r := mustOK(t, "datastores", empty, "--output-format", "json"); !strings.Contains(r.out, `"datastores":[]`) || !strings.Contains(r.err, "no datastore found") {
		t.Errorf("datastores of an empty directory: %v", r)
	}
	mustFail(t, exitOutside, []string{"no datastore under"}, "datastores", filepath.Join(top, "missing"))
	mustFail(t, exitUsage, nil, "datastores")
}

// TestDatastoresLocationNamed: datastores names its LOCATION as the
// argument it is (not --store) when it does not parse, and, when the walk
// fails, with its settings (as the reports show it), not as a bare bucket.
func TestDatastoresLocationNamed(t *testing.T) {
	for _, c := range []struct {
		loc  string
		code int
		want string
	}{
		{"s3://pbs?bogus=1", exitUsage, "LOCATION s3://pbs?bogus="},
		{"s3://", exitUsage, "LOCATION: "},
		{"s3://pbs/ds?endpoint=http://127.0.0.1:1&env=PBSDIRECT_TEST_NONE", exitOutside, "error: s3://pbs/ds?endpoint=http://127.0.0.1:1&env=PBSDIRECT_TEST_NONE: "},
	} {
		t.Run(c.loc, func(t *testing.T) {
			r := mustFail(t, c.code, []string{c.want}, "datastores", "--retry-for", "1s", c.loc)
			if strings.Contains(r.err, "--store") {
				t.Errorf("LOCATION named --store: %v", r)
			}
		})
	}
}
