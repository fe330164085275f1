package backends

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSameStore: a datastore named through another spelling, a symbolic
// link or a bind mount is the same store; a copy of it is not; buckets
// compare by scheme, bucket and prefix.
func TestSameStore(t *testing.T) {
	base := t.TempDir()
	ds := filepath.Join(base, "ds")
	other := filepath.Join(base, "other")
	link := filepath.Join(base, "link")
	for _, d := range []string{ds, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ds, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{ds, ds, true},
		{ds, "./ds/", true},
		{ds, "ds/../ds", true},
		{ds, link, true},
		{ds, other, false},
		{ds, filepath.Join(base, "gone"), false},
		{filepath.Join(base, "gone"), "./gone/", true},
		{"s3://b/p", "s3://b/p/", true},
		{"s3://b/p", "s3://b/q", false},
		{"s3://b/p", "s3://c/p", false},
		{"s3://b/p", "gs://b/p", false},
		{"s3://b", "s3://b/", true},
		{"s3://b", ds, false},
	} {
		if got := SameStore(c.a, c.b); got != c.want {
			t.Errorf("SameStore(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if bindMount(t, ds, other) {
		if !SameStore(ds, other) {
			t.Errorf("SameStore(%q, its bind mount %q) = false", ds, other)
		}
	}
}
