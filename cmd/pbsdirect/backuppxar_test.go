package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestBackupPxarS3 backs up a directory as root.pxar into an S3 bucket
// (versitygw), split and legacy: the tar stream restored from the bucket
// holds the tree's files and symlinks; a second backup of the unchanged
// tree writes no chunk. A file as a pxar source, or a bad --pxar-format,
// is refused before anything is written.
func TestBackupPxarS3(t *testing.T) {
	fixture.SkipIfShort(t)
	tree := filepath.Join(t.TempDir(), "tree")
	files := map[string][]byte{
		"etc/hostname":          []byte("web1\n"),
		"var/lib/data.bin":      fixture.Mixed(5<<20+77, 3),
		"home/a user/ünï.txt":   []byte("utf-8 name\n"),
		"home/a user/empty.txt": nil,
	}
	for p, data := range files {
		full := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../var/lib/data.bin", filepath.Join(tree, "etc/link")); err != nil {
		t.Fatal(err)
	}
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "")
	store := "s3://bkt/store"
	flags := []string{"--store", store, "--s3-endpoint", s3.Endpoint}
	backupAt := func(btime, format string) backupSummary {
		t.Helper()
		args := append([]string{"backup"}, flags...)
		r := mustOK(t, append(args, "--output-format", "json", "--backup-type", "host", "--backup-id", "web1",
			"--backup-time", btime, "--pxar-format", format, "root.pxar:"+tree)...)
		var s backupSummary
		if err := json.Unmarshal([]byte(r.out), &s); err != nil {
			t.Fatalf("backup JSON: %v\n%s", err, r.out)
		}
		return s
	}
	for i, format := range []string{"split", "legacy"} {
		t1 := []string{"2026-11-29T10:00:00Z", "2026-11-29T12:00:00Z"}[i]
		t2 := []string{"2026-11-29T11:00:00Z", "2026-11-29T13:00:00Z"}[i]
		s := backupAt(t1, format)
		want := map[string][]string{"split": {"root.mpxar.didx", "root.ppxar.didx"}, "legacy": {"root.pxar.didx", "catalog.pcat1.didx"}}[format]
		if strings.Join(s.Archives, " ") != strings.Join(want, " ") || s.Uploaded == 0 {
			t.Fatalf("%s: archives %v, %d chunks uploaded", format, s.Archives, s.Uploaded)
		}
		s2 := backupAt(t2, format)
		if s2.Uploaded != 0 || s2.Existing+s2.DedupHits != s.Uploaded+s.DedupHits {
			t.Errorf("%s: second backup uploaded %d chunks, found %d (+%d repeated); first uploaded %d", format, s2.Uploaded, s2.Existing, s2.DedupHits, s.Uploaded)
		}
		args := append([]string{"restore"}, flags...)
		r := mustOK(t, append(args, "host/web1/"+t1, "root.pxar", "-", "--format", "tar")...)
		got := map[string][]byte{}
		tr := tar.NewReader(bytes.NewReader([]byte(r.out)))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: tar: %v", format, err)
			}
			name := strings.TrimPrefix(h.Name, "./")
			switch h.Typeflag {
			case tar.TypeReg:
				got[name], _ = io.ReadAll(tr)
			case tar.TypeSymlink:
				got[name] = []byte("-> " + h.Linkname)
			}
		}
		files["etc/link"] = []byte("-> ../var/lib/data.bin")
		if len(got) != len(files) {
			t.Errorf("%s: restored %d files, want %d", format, len(got), len(files))
		}
		for p, data := range files {
			fixture.EqualBytes(t, format+" "+p, got[p], data)
		}
		delete(files, "etc/link")
	}
	args := append([]string{"backup"}, flags...)
	mustFail(t, 2, []string{"--pxar-format"}, append(args, "--pxar-format", "zip", "root.pxar:"+tree)...)
	mustFail(t, 2, []string{"not a directory"}, append(args, "root.pxar:"+filepath.Join(tree, "etc/hostname"))...)
}
