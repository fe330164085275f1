package chunkstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestLocalListVanished removes directories and files the moment the walk
// reaches them, as a prune on a live datastore does: they are left out, the
// listing does not fail, everything else is listed.
func TestLocalListVanished(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".chunks"), 0o755)
	files := []string{
		"vm/800/2026-11-01T04:00:00Z/index.json.blob",
		"vm/800/2026-11-01T04:00:00Z/drive-scsi0.img.fidx",
		"vm/800/2026-11-02T04:00:00Z/index.json.blob",
		"vm/800/2026-11-05T04:00:00Z/index.json.blob",
		"vm/801/2026-11-05T04:00:00Z/index.json.blob",
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	for _, tc := range []struct {
		name   string
		remove string // removed when the walk enters its parent... or itself
		want   []string
	}{
		{"snapshot dir", "vm/800/2026-11-01T04:00:00Z", []string{files[2], files[3], files[4]}},
		{"group dir", "vm/800", []string{files[4]}},
		{"nothing", "", files},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(root)); err != nil {
				t.Fatal(err)
			}
			l, err := OpenLocal(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			l.onDir = func(p string) {
				if tc.remove != "" && p == filepath.Join(dir, tc.remove) {
					if err := os.RemoveAll(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := l.ListFiles(context.Background(), "vm")
			if err != nil {
				t.Fatalf("ListFiles: %v", err)
			}
			var names []string
			for _, f := range got {
				names = append(names, f.Path)
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			sort.Strings(names)
			if strings.Join(names, "\n") != strings.Join(want, "\n") {
				t.Errorf("listed:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestLocalClaimSnapshot: a directory store's claim takes the group lock
// (flock on the group directory) and creates the snapshot directory; a
// second claim in the same group fails with ErrSnapshotBusy until the first
// is released, and a directory a failed backup left (no manifest) is
// claimed again.
func TestLocalClaimSnapshot(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLocal(root, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const dir = "ns/a/vm/100/2026-01-01T00:00:00Z"
	release, err := l.ClaimSnapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
		t.Fatalf("snapshot directory not created: %v", err)
	}
	for _, other := range []string{dir, "ns/a/vm/100/2026-01-02T00:00:00Z"} {
		if _, err := l.ClaimSnapshot(ctx, other); !errors.Is(err, ErrSnapshotBusy) {
			t.Errorf("claim of %s while the group is locked: %v, want ErrSnapshotBusy", other, err)
		}
	}
	other, err := l.ClaimSnapshot(ctx, "ns/a/vm/101/2026-01-01T00:00:00Z")
	if err != nil {
		t.Errorf("another group is not locked: %v", err)
	} else {
		other()
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := l.ClaimSnapshot(ctx, dir)
	if err != nil {
		t.Fatalf("claim after release (directory left without manifest): %v", err)
	}
	again()
	if _, err := l.ClaimSnapshot(ctx, "../x"); err == nil {
		t.Error("claim outside the datastore accepted")
	}
}
