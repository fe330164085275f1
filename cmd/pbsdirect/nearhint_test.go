package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestNearHintWording: an existing empty --store directory (an unmounted
// mount point) names no other datastore and says it is empty; a mistyped
// path names the datastores beside it without the generic "(a disk not
// mounted? …)" tail, which stays when nothing is suggested.
func TestNearHintWording(t *testing.T) {
	top := t.TempDir()
	for _, d := range []string{"ds1/.chunks", "ds2/.chunks", "emptymnt", "other/sub"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const generic = "a disk not mounted? a bucket or prefix not created yet?"
	for _, tc := range []struct {
		store     string
		want, not []string
	}{
		{"emptymnt", []string{"is an empty directory: a disk not mounted there?"}, []string{"did you mean", "ds1", generic}},
		{"nonexist", []string{"did you mean --store " + filepath.Join(top, "ds1") + " (or " + filepath.Join(top, "ds2") + ")?"}, []string{generic}},
		{"ds1/vm", []string{"did you mean --store " + filepath.Join(top, "ds1") + "?"}, []string{generic}},
		{"other", []string{generic}, []string{"did you mean", "empty directory"}},
	} {
		r := mustFail(t, exitOutside, tc.want, "snapshots", "--store", filepath.Join(top, tc.store))
		for _, n := range tc.not {
			if strings.Contains(r.err, n) {
				t.Errorf("--store %s: says %q: %s", tc.store, n, r.err)
			}
		}
	}
}

// TestNearHintSlowStore: a mistyped --store on a store that answers
// slowly (2 s a request) is not held up by the "did you mean" probe, which
// stops at its time bound (discover.NearTimeout): the opening error comes
// without a hint, after a few requests (the probe alone would need more
// than 5 to find the datastore beside it; the old probe made them all).
func TestNearHintSlowStore(t *testing.T) {
	fixture.SkipIfShort(t)
	srv := testenv.StartS3(t)
	srv.Bucket(t, "bkt")
	bktSetEnv(t, "")
	srv.PutFile(t, "bkt", "store/.in-use", []byte("{}"))
	direct := mustFail(t, exitOutside, []string{"did you mean --store s3://bkt/store?"}, "snapshots", "--store", "s3://bkt/stor", "--s3-endpoint", srv.Endpoint)
	p := bktProxy(t, srv.Endpoint, 2*time.Second)
	r := pbs(t, "snapshots", "--store", "s3://bkt/stor", "--s3-endpoint", p.URL)
	t.Logf("%d requests through the slow proxy", p.Requests())
	if r.code != direct.code || strings.Contains(r.err, "did you mean") || !strings.Contains(r.err, "no PBS datastore at this prefix") {
		t.Errorf("slow store: want the opening error (exit %d) without a hint: %v", direct.code, r)
	}
	if n := p.Requests(); n > 6 {
		t.Errorf("slow store: %d requests reached it, want at most 6 (the probe bounded in time; it made 7 before)", n)
	}
}

// TestDatastoresLinkNote: 'datastores' says that it did not follow the
// symbolic links it met (one to a datastore), counted, one named with its
// control bytes escaped.
func TestDatastoresLinkNote(t *testing.T) {
	top, other := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "ds", ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "ds"), filepath.Join(top, "ds\x1blink")); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, "datastores", top)
	if !strings.Contains(r.err, "note: 1 symbolic link(s) not followed") || !strings.Contains(r.err, "ds\\x1blink") || strings.Contains(r.err, "\x1b") {
		t.Errorf("datastores with a link to a datastore: %v", r)
	}
}

// TestDatastoresLeftOutAlways: the JSON of 'datastores' has "left-out"
// also when the walk was complete (an empty list).
func TestDatastoresLeftOutAlways(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "ds", ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, "datastores", top, "--output-format", "json")
	if !strings.Contains(r.out, `"left-out":[]`) {
		t.Errorf("no empty left-out: %s", r.out)
	}
}

// TestListingMaxDepthRange: the listings take --max-depth 0..7 as PBS
// does, and -1 for every level; anything else exits 2 before the store is
// opened.
func TestListingMaxDepthRange(t *testing.T) {
	store := t.TempDir()
	if err := os.MkdirAll(filepath.Join(store, ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"groups", "snapshots", "namespaces"} {
		for _, d := range []string{"-2", "8", "9"} {
			mustFail(t, exitUsage, []string{"--max-depth must be 0..7"}, cmd, "--store", store, "--max-depth", d)
		}
		for _, d := range []string{"-1", "0", "7"} {
			mustOK(t, cmd, "--store", store, "--max-depth", d)
		}
	}
}

// TestDirArgWording: a DIR argument that does not exist says "no such
// directory", one that is a file "not a directory" (restore-guest, man).
func TestDirArgWording(t *testing.T) {
	store := t.TempDir()
	if err := os.MkdirAll(filepath.Join(store, ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nonexist")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, exitUsage, []string{"DIR " + missing + ": no such directory"}, "restore-guest", "--store", store, "vm/100", missing)
	mustFail(t, exitUsage, []string{"DIR " + file + ": not a directory"}, "restore-guest", "--store", store, "vm/100", file)
	mustFail(t, exitUsage, []string{missing + ": no such directory"}, "man", missing)
}

// TestNamespaceHintCommands: snapshots, restore, restore-guest and verify
// of a group that exists only in another namespace exit 1 and say where
// it is ("--ns lab").
func TestNamespaceHintCommands(t *testing.T) {
	store := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 3))
	fixture.Backup(t, store, fixture.Snap(t, "lab", "ct", "9", fixture.T0), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	const hint = "(it exists in namespace lab: --ns lab)"
	out := t.TempDir()
	for _, args := range [][]string{
		{"snapshots", "--store", store, "ct/9"},
		{"restore", "--store", store, "ct/9", "drive-scsi0.img", filepath.Join(out, "x.raw")},
		{"restore-guest", "--store", store, "ct/9", out},
		{"verify", "--store", store, "ct/9"},
	} {
		mustFail(t, exitData, []string{"no finished snapshot in the root namespace", hint}, args...)
	}
}

// TestNearHintMore: among many datastores a mistyped --store names the
// closest first and says how many more were found and what lists them.
func TestNearHintMore(t *testing.T) {
	top := t.TempDir()
	for i := 1; i <= 30; i++ {
		if err := os.MkdirAll(filepath.Join(top, fmt.Sprintf("d%02d", i), ".chunks"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustFail(t, exitOutside, []string{"did you mean --store " + filepath.Join(top, "d27") + " (or ", ", and 6 more (pbsdirect datastores " + top + " lists them)?"}, "snapshots", "--store", filepath.Join(top, "d27x"))
}
