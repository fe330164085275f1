package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// TestMountPxar: mount shows a container snapshot's pxar archive, legacy
// or split, plain or encrypted, as the directory root.pxar/ beside the
// config file: a file reads back byte-exact, a symlink reads, and
// reading one small file of the tree fetches only a few chunks, not the
// archive.
func TestMountPxar(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	for _, c := range []struct {
		name       string
		split, enc bool
	}{
		{"legacy", false, false},
		{"legacy-encrypted", false, true},
		{"split", true, false},
		{"split-encrypted", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			big := fixture.Mixed(2<<20+5, 11)
			root := &pxar.Node{Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755}, Children: []*pxar.Node{
				{Name: "big.bin", Kind: pxar.KindFile, Data: big, Metadata: pxar.Metadata{Mode: 0o644, MTimeSec: 1700000000}},
				{Name: "etc", Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755}, Children: []*pxar.Node{
					{Name: "hosts", Kind: pxar.KindFile, Data: []byte("127.0.0.1 localhost\n"), Metadata: pxar.Metadata{Mode: 0o644}},
				}},
				{Name: "hosts", Kind: pxar.KindSymlink, LinkTarget: "etc/hosts", Metadata: pxar.Metadata{Mode: 0o777}},
			}}
			store := fixture.NewStore(t)
			snap := fixture.Snap(t, "", "ct", "200", fixture.T0)
			o := fixture.PxarOptions{Split: c.split, Seed: 5}
			args := []string{"mount", "--store", store}
			if c.enc {
				var key [crypto.KeySize]byte
				key, o.Key = fixture.Key(t, 9)
				args = append(args, "--keyfile", fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, ""))
			}
			fixture.PxarSnapshot(t, store, snap, root, o)
			mnt := t.TempDir()
			r := start(t, append(args, snap.String(), mnt)...)
			r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "mounted") })
			if !strings.Contains(r.out.String(), " root.pxar/") {
				t.Errorf("the mount line does not show root.pxar/:\n%s", r.out)
			}
			if got, err := os.ReadFile(filepath.Join(mnt, "root.pxar", "hosts")); err != nil || string(got) != "127.0.0.1 localhost\n" {
				t.Errorf("root.pxar/hosts through the symlink: %q %v", got, err)
			}
			if got, err := os.ReadFile(filepath.Join(mnt, "root.pxar", "big.bin")); err != nil || !bytes.Equal(got, big) {
				t.Errorf("root.pxar/big.bin: %d bytes, %v", len(got), err)
			}
			if _, err := os.Stat(filepath.Join(mnt, "pct.conf")); err != nil {
				t.Errorf("pct.conf: %v", err)
			}
			if code := r.stop(t); code != 0 {
				t.Fatalf("mount exited %d:\n%s\n%s", code, r.out, r.err)
			}
			if strings.Contains(r.err.String(), "cannot browse") {
				t.Errorf("stderr: %s", r.err)
			}
		})
	}

	// Reading one small file fetches a few chunks of a large archive.
	t.Run("small-read", func(t *testing.T) {
		root := &pxar.Node{Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755}, Children: []*pxar.Node{
			{Name: "a.bin", Kind: pxar.KindFile, Data: fixture.Mixed(3<<20, 12), Metadata: pxar.Metadata{Mode: 0o644}},
			{Name: "small", Kind: pxar.KindFile, Data: []byte("x"), Metadata: pxar.Metadata{Mode: 0o644}},
			{Name: "z.bin", Kind: pxar.KindFile, Data: fixture.Mixed(3<<20, 13), Metadata: pxar.Metadata{Mode: 0o644}},
		}}
		store := fixture.NewStore(t)
		snap := fixture.Snap(t, "", "ct", "200", fixture.T0)
		fixture.PxarSnapshot(t, store, snap, root, fixture.PxarOptions{Split: true, Seed: 6})
		mnt := t.TempDir()
		r := start(t, "mount", "--store", store, "--fetchers", "1", snap.String(), mnt)
		r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "mounted") })
		if got, err := os.ReadFile(filepath.Join(mnt, "root.pxar", "small")); err != nil || string(got) != "x" {
			t.Errorf("small: %q %v", got, err)
		}
		if code := r.stop(t); code != 0 {
			t.Fatalf("mount exited %d:\n%s\n%s", code, r.out, r.err)
		}
		m := regexp.MustCompile(`root\.ppxar\.didx: ([0-9]+) chunks fetched`).FindStringSubmatch(r.out.String())
		if m == nil {
			t.Fatalf("no fetch count for the payload stream:\n%s", r.out)
		}
		if n, _ := strconv.Atoi(m[1]); n > 3 {
			t.Errorf("reading a 1-byte file fetched %d payload chunks of a 6 MiB archive:\n%s", n, r.out)
		}
	})
}
