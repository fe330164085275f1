package discover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
)

// fakeLister lists a fixed set of object keys as a bucket would, counting
// its listings.
type fakeLister struct {
	keys  []string
	calls int
}

func (f *fakeLister) AnyObject(_ context.Context, prefix string) (bool, error) {
	f.calls++
	return slices.ContainsFunc(f.keys, func(k string) bool { return strings.HasPrefix(k, prefix) }), nil
}

func (f *fakeLister) ListLevel(_ context.Context, prefix string) (dirs, objects []string, err error) {
	f.calls++
	seen := map[string]bool{}
	for _, k := range f.keys {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		if d, _, found := strings.Cut(rest, "/"); found {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d+"/")
			}
			continue
		}
		objects = append(objects, rest)
	}
	return dirs, objects, nil
}

// threeStores is a bucket with a PBS 4 S3 datastore, a bucket copy of a
// directory datastore and a nested PBS 4 datastore holding only its
// .in-use marker, beside other objects.
var threeStores = []string{
	"pbs4/.in-use",
	"pbs4/.cnt/vm/100/2026-11-29T10:00:00Z/index.json.blob",
	"pbs4/.cnt/ns/prod/.namespace",
	"pbs4/.chunks/0000/00000000",
	"copy/.chunks/ffff/ffff",
	"copy/.lock",
	"copy/vm/100/2026-11-29T10:00:00Z/index.json.blob",
	"site/eu/nested/.in-use",
	"site/eu/readme.txt",
	"other/file",
}

func TestBucketWalk(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		prefix string
		o      Options
		want   []Datastore
		left   bool
	}{
		{"bucket root", "", Options{}, []Datastore{
			{"s3://b/copy", "plain"}, {"s3://b/pbs4", "pbs4-s3"}, {"s3://b/site/eu/nested", "pbs4-s3"}}, false},
		{"depth 1", "", Options{MaxDepth: 1}, []Datastore{{"s3://b/copy", "plain"}, {"s3://b/pbs4", "pbs4-s3"}}, true},
		{"below a prefix", "site", Options{}, []Datastore{{"s3://b/site/eu/nested", "pbs4-s3"}}, false},
		{"the datastore itself", "pbs4", Options{}, []Datastore{{"s3://b/pbs4", "pbs4-s3"}}, false},
		{"request bound", "", Options{MaxRequests: 2}, []Datastore{{"s3://b/copy", "plain"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &fakeLister{keys: threeStores}
			r, err := walk(ctx, bucketTree{l: l, scheme: "s3", bucket: "b"}, tc.prefix, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Datastores, tc.want) {
				t.Errorf("found %v, want %v", r.Datastores, tc.want)
			}
			if (len(r.LeftOut) > 0) != tc.left {
				t.Errorf("left out %q, want some: %v", r.LeftOut, tc.left)
			}
			if r.Requests != l.calls {
				t.Errorf("Requests %d, lister saw %d", r.Requests, l.calls)
			}
			if max := tc.o.MaxRequests; max > 0 && l.calls > max {
				t.Errorf("%d listings, bound %d", l.calls, max)
			}
		})
	}
}

// TestNearBucket: a --store inside a datastore (its .cnt, a group, a
// namespace) names the datastore; the bucket root and a parent name those
// below; a sibling's prefix names the siblings.
func TestNearBucket(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"pbs4/.cnt", []string{"s3://b/pbs4"}},
		{"pbs4/.cnt/vm/100", []string{"s3://b/pbs4"}},
		{"copy/vm/100", []string{"s3://b/copy"}},
		{"", []string{"s3://b/copy", "s3://b/pbs4", "s3://b/site/eu/nested"}},
		{"site", []string{"s3://b/site/eu/nested"}},
		{"site/eu/nestd", []string{"s3://b/site/eu/nested"}},
		{"other", []string{"s3://b/copy", "s3://b/pbs4"}},
	} {
		l := &fakeLister{keys: threeStores}
		got, err := near(ctx, bucketTree{l: l, scheme: "s3", bucket: "b"}, tc.prefix)
		if err != nil {
			t.Fatalf("%q: %v", tc.prefix, err)
		}
		var locs []string
		for _, d := range got {
			locs = append(locs, d.Location)
		}
		if !reflect.DeepEqual(locs, tc.want) {
			t.Errorf("near %q: %v, want %v", tc.prefix, locs, tc.want)
		}
		if l.calls > nearUp+2*nearRequests {
			t.Errorf("near %q: %d listings", tc.prefix, l.calls)
		}
	}
}

// TestDirWalk: directory datastores are found by their .chunks, links are
// not followed, a datastore's own directories are not walked.
func TestDirWalk(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/ds1/.chunks/0000", "a/ds1/vm/100", "a/ds1/inner/.chunks", "b/c/ds2/.chunks", "empty"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "ds3", ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	r, err := Find(context.Background(), root, backends.Options{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Datastore{{filepath.Join(root, "a/ds1"), LayoutDirectory}, {filepath.Join(root, "b/c/ds2"), LayoutDirectory}}
	if !reflect.DeepEqual(r.Datastores, want) {
		t.Errorf("found %v, want %v", r.Datastores, want)
	}
	for _, loc := range []string{filepath.Join(root, "a/ds1/vm/100"), filepath.Join(root, "a/ds1/.chunks")} {
		got, err := Near(context.Background(), loc, backends.Options{})
		if err != nil || len(got) != 1 || got[0].Location != filepath.Join(root, "a/ds1") {
			t.Errorf("Near(%s) = %v, %v; want a/ds1", loc, got, err)
		}
	}
	if _, err := Find(context.Background(), filepath.Join(root, "missing"), backends.Options{}, Options{}); err == nil {
		t.Error("Find of a missing directory: no error")
	}
}

// TestNearDirSiblings: a --store directory that exists but holds no
// datastore (an empty mount point whose disk is not mounted) is not given
// the datastores beside it as "did you mean"; a path that does not exist
// (a typo) is, and one inside or above a datastore names it.
func TestNearDirSiblings(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ds1/.chunks", "ds2/.chunks", "emptymnt", "other/file-only", "up/inner/ds3/.chunks"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		loc  string
		want []string
	}{
		{"emptymnt", nil},
		{"other", nil},
		{"ds3", []string{"ds1", "ds2"}}, // not there: a typo of a sibling
		{"ds1/vm/100", []string{"ds1"}},
		{"up", []string{"up/inner/ds3"}},
	} {
		got, err := Near(context.Background(), filepath.Join(root, tc.loc), backends.Options{})
		if err != nil {
			t.Fatalf("Near(%s): %v", tc.loc, err)
		}
		var locs []string
		for _, d := range got {
			rel, _ := filepath.Rel(root, d.Location)
			locs = append(locs, rel)
		}
		if !reflect.DeepEqual(locs, tc.want) {
			t.Errorf("Near(%s) = %v, want %v", tc.loc, locs, tc.want)
		}
	}
}

// failingLister is a bucket whose listings all fail with err, counting
// them.
type failingLister struct {
	err   error
	calls int
}

func (f *failingLister) AnyObject(context.Context, string) (bool, error) {
	f.calls++
	return false, f.err
}

func (f *failingLister) ListLevel(context.Context, string) ([]string, []string, error) {
	f.calls++
	return nil, nil, f.err
}

// TestNearStopsOutside: the probe stops at its first listing that fails
// for a reason outside the data (refused, unavailable, timed out), with
// that error; one that proves nothing there (not found) goes on.
func TestNearStopsOutside(t *testing.T) {
	for _, tc := range []struct {
		err       error
		wantCalls int
	}{
		{fmt.Errorf("403: %w", chunkstore.ErrDenied), 1},
		{fmt.Errorf("503: %w", chunkstore.ErrUnavailable), 1},
		{context.DeadlineExceeded, 1},
		{chunkstore.ErrNotFound, 4}, // up to "a" and "", down, beside
	} {
		l := &failingLister{err: tc.err}
		got, err := near(context.Background(), bucketTree{l: l, scheme: "s3", bucket: "b"}, "a/typo")
		if !errors.Is(err, tc.err) || got != nil || l.calls != tc.wantCalls {
			t.Errorf("%v: %v, %v after %d listing(s); want the error after %d", tc.err, got, err, l.calls, tc.wantCalls)
		}
	}
}

// TestDirWalkLinksNoted: the symbolic links a walk does not follow (one to
// a datastore, a dangling one) are said in LeftOut, counted, one named
// with its control bytes escaped.
func TestDirWalkLinksNoted(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "ds", ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "ds"), filepath.Join(root, "a\x1b[31mlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "gone"), filepath.Join(root, "z.bad")); err != nil {
		t.Fatal(err)
	}
	r, err := Find(context.Background(), root, backends.Options{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	note := strings.Join(r.LeftOut, "\n")
	if len(r.Datastores) != 0 || !strings.Contains(note, "2 symbolic link(s) not followed") || !strings.Contains(note, `a\x1b[31mlink`) || strings.Contains(note, "\x1b") {
		t.Errorf("walk with two links: %v, left out %q", r.Datastores, r.LeftOut)
	}
}

// TestNearRanked: a mistyped location among many datastores gets them
// closest first (edit distance of the last component, then the prefix
// shared), the closest listed even when the walk's bound stops before the
// rest; not in name order.
func TestNearRanked(t *testing.T) {
	root := t.TempDir()
	for i := 1; i <= 30; i++ {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d", i), ".chunks"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Near(context.Background(), filepath.Join(root, "d27x"), backends.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, filepath.Base(d.Location))
	}
	if len(names) < 3 || names[0] != "d27" || !strings.HasPrefix(names[1], "d2") || !strings.HasPrefix(names[2], "d2") {
		t.Errorf("Near(d27x) = %v; want d27 first, then d2…", names)
	}
	ds := Rank("s3://b/prod-ds", []Datastore{{Location: "s3://b/a"}, {Location: "s3://b/prod-dx"}, {Location: "s3://b/prod-ds2"}, {Location: "s3://b/zzzzzzz"}})
	var locs []string
	for _, d := range ds {
		locs = append(locs, d.Location)
	}
	want := []string{"s3://b/prod-ds2", "s3://b/prod-dx", "s3://b/a", "s3://b/zzzzzzz"}
	if !reflect.DeepEqual(locs, want) {
		t.Errorf("Rank = %v, want %v", locs, want)
	}
}
