package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// pxarCase is a container snapshot holding a pxar archive of one form.
type pxarCase struct {
	name         string
	split, enc   bool
	store, snap  string
	keyArgs      []string
	tree         *pxar.Node
	meta, payldx string // index names
}

// pxarStore writes a ct snapshot with tree as a pxar archive (split or
// legacy, encrypted or plain) into a new directory store.
func pxarStore(t *testing.T, tree *pxar.Node, split, enc bool) *pxarCase {
	t.Helper()
	c := &pxarCase{split: split, enc: enc, store: fixture.NewStore(t), tree: tree}
	c.name = map[bool]string{false: "legacy", true: "split"}[split] + map[bool]string{false: "-plain", true: "-encrypted"}[enc]
	snap := fixture.Snap(t, "", "ct", "200", fixture.T0)
	c.snap = snap.String()
	o := fixture.PxarOptions{Split: split, Seed: 5}
	if enc {
		key, cc := fixture.Key(t, 11)
		o.Key = cc
		c.keyArgs = []string{"--keyfile", fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")}
	}
	names := fixture.PxarSnapshot(t, c.store, snap, tree, o)
	c.meta = names[0]
	if split {
		c.payldx = names[1]
	}
	return c
}

// gnuTarFor returns GNU tar with --xattrs and --acls, skipping t without
// it or without root (owners, devices, capabilities).
func gnuTarFor(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("extracting owners, devices and capabilities needs root")
	}
	p, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar")
	}
	out, _ := exec.Command(p, "--help").Output()
	if !strings.Contains(string(out), "--acls") || !strings.Contains(string(out), "--xattrs") {
		t.Skip("tar is no GNU tar with --acls and --xattrs")
	}
	return p
}

// extractTar extracts stream with GNU tar into a new directory.
func extractTar(t *testing.T, tarBin string, stream []byte) string {
	t.Helper()
	f := fixture.WriteFile(t, t.TempDir(), "s.tar", stream)
	dst := t.TempDir()
	out, err := exec.Command(tarBin, "--xattrs", "--xattrs-include=*", "--acls", "--numeric-owner", "-xpf", f, "-C", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.Contains(l, "implausibly old time stamp") {
			t.Errorf("tar -x says: %s", l)
		}
	}
	return dst
}

// TestRestorePxarTar: restore SNAPSHOT root.pxar - --format tar writes a
// tar stream that GNU tar extracts to the archived tree, for legacy and
// split archives, plain and encrypted, from a directory store and from an
// S3 bucket.
func TestRestorePxarTar(t *testing.T) {
	tarBin := gnuTarFor(t)
	tree := fixture.ExtractTree(2<<20 + 11)
	for _, split := range []bool{false, true} {
		for _, enc := range []bool{false, true} {
			c := pxarStore(t, tree, split, enc)
			t.Run(c.name, func(t *testing.T) {
				r := mustOK(t, append([]string{"restore", "--store", c.store, c.snap, "root.pxar", "-", "--format", "tar"}, c.keyArgs...)...)
				if !strings.Contains(r.err, "as tar") || !strings.Contains(r.err, "1 socket(s) left out") {
					t.Errorf("stderr: %s", r.err)
				}
				fixture.CompareExtracted(t, extractTar(t, tarBin, []byte(r.out)), tree, true)
			})
		}
	}
	t.Run("s3-split-encrypted", func(t *testing.T) {
		fixture.SkipIfShort(t)
		c := pxarStore(t, tree, true, true)
		root := t.TempDir()
		fixture.CopyDir(t, c.store, filepath.Join(root, "ctbkt", "ds"))
		s3 := testenv.StartS3Dir(t, root)
		s3.AdoptFiles(t)
		bktSetEnv(t, "")
		r := mustOK(t, append([]string{"restore", "--store", "s3://ctbkt/ds", "--s3-endpoint", s3.Endpoint, c.snap, "root.pxar", "-", "--format", "tar"}, c.keyArgs...)...)
		fixture.CompareExtracted(t, extractTar(t, tarBin, []byte(r.out)), tree, true)
	})
}

// TestRestorePxarFormat: without --format a legacy archive to - is its raw
// stream as before; a split archive's raw stream is refused naming
// --format tar (exit 2); --format is refused for disk images and targets
// other than -.
func TestRestorePxarFormat(t *testing.T) {
	tree := fixture.ExtractTree(100 << 10)
	legacy := pxarStore(t, tree, false, false)
	r := mustOK(t, "restore", "--store", legacy.store, legacy.snap, "root.pxar", "-")
	var want bytes.Buffer
	if err := pxar.Encode(&want, nil, tree); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(r.out), want.Bytes()) {
		t.Fatalf("raw stream of %d bytes, want the archive's %d", len(r.out), want.Len())
	}
	split := pxarStore(t, tree, true, false)
	mustFail(t, exitUsage, []string{"split archive", "--format tar"}, "restore", "--store", split.store, split.snap, "root.pxar", "-")
	mustFail(t, exitUsage, []string{"split archive", "--format tar"}, "restore", "--store", split.store, split.snap, "root.pxar", "-", "--format", "pxar")
	mustFail(t, exitUsage, []string{"--format"}, "restore", "--store", split.store, split.snap, "root.pxar", "-", "--format", "zip")
	mustFail(t, exitUsage, []string{"pxar archives"}, "restore", "--store", split.store, split.snap, "pct.conf", "-", "--format", "tar")
	mustFail(t, exitUsage, []string{"TARGET -"}, "restore", "--store", split.store, split.snap, "root.pxar", filepath.Join(t.TempDir(), "x"), "--format", "tar")
	mustFail(t, exitUsage, []string{"other"}, "restore", "--store", split.store, split.snap, "other.pxar", "-", "--format", "tar")
}

// TestCatalogDump: catalog dump lists a legacy archive from its catalog
// and a split one from its metadata stream alone (every payload chunk
// removed from the store), the same entries either way, names escaped.
func TestCatalogDump(t *testing.T) {
	tree := fixture.ExtractTree(1 << 20)
	var listings []string
	for _, split := range []bool{false, true} {
		for _, enc := range []bool{false, true} {
			c := pxarStore(t, tree, split, enc)
			t.Run(c.name, func(t *testing.T) {
				if split {
					removeOnlyChunksOf(t, c.store, c.snap, c.payldx, c.meta)
				}
				r := mustOK(t, append([]string{"catalog", "dump", "--store", c.store, c.snap}, c.keyArgs...)...)
				out := strings.ReplaceAll(r.out, c.meta, "ARCHIVE")
				for _, want := range []string{
					"d \"./ARCHIVE\"\n",
					"f \"./ARCHIVE/plain\" 5 ",
					"f \"./ARCHIVE/with space ünïcødé ☃/line\\nbreak\" 2 ",
					"h \"./ARCHIVE/zz-hardlink\"\n",
					"l \"./ARCHIVE/link\"\n",
					"c \"./ARCHIVE/null\"\n", "b \"./ARCHIVE/sda\"\n", "p \"./ARCHIVE/fifo\"\n", "s \"./ARCHIVE/sock\"\n",
					"f \"./ARCHIVE/many/f1999\" 12 ",
				} {
					if !strings.Contains(out, want) {
						t.Errorf("no %q in\n%.2000s", want, out)
					}
				}
				if n := strings.Count(out, "\n"); n != 2020 {
					t.Errorf("%d lines", n)
				}
				listings = append(listings, out)
				r = mustOK(t, append([]string{"catalog", "dump", "--store", c.store, c.snap, "root.pxar", "--output-format", "json"}, c.keyArgs...)...)
				if !strings.Contains(r.out, `"path":"with space ünïcødé ☃/line\nbreak"`) && !strings.Contains(r.out, `"path": "with space ünïcødé ☃/line\nbreak"`) {
					t.Errorf("json: %.600s", r.out)
				}
			})
		}
	}
	for i := 1; i < len(listings); i++ {
		if listings[i] != listings[0] {
			t.Errorf("listing %d differs from the first", i)
		}
	}
}

// removeOnlyChunksOf removes the chunks of snapshot snap's index name
// that index keep does not use.
func removeOnlyChunksOf(t *testing.T, store, snap, name, keep string) {
	t.Helper()
	s, err := index.ParseSnapshotRef(snap)
	if err != nil {
		t.Fatal(err)
	}
	digests := func(n string) map[crypto.Digest]bool {
		b, err := os.ReadFile(fixture.SnapPath(store, s, n))
		if err != nil {
			t.Fatal(err)
		}
		x, err := index.ParseDynamic(b)
		if err != nil {
			t.Fatal(err)
		}
		m := map[crypto.Digest]bool{}
		for _, e := range x.Entries {
			m[e.Digest] = true
		}
		return m
	}
	kept := digests(keep)
	removed := 0
	for d := range digests(name) {
		if !kept[d] {
			if err := os.Remove(fixture.ChunkPath(store, d)); err != nil {
				t.Fatal(err)
			}
			removed++
		}
	}
	if removed == 0 {
		t.Fatal("no payload chunk to remove")
	}
}
