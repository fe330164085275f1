package chunkstore

import (
	"context"
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
