package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/verify"
)

// pbsWithin runs pbsdirect in-process and fails the test if it does not
// return within d: hostile datastores must fail, not hang.
func pbsWithin(t *testing.T, d time.Duration, args ...string) result {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		ch <- result{code: code, out: out.String(), err: errb.String(), args: args}
	}()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("pbsdirect %s: still running after %v", strings.Join(args, " "), d)
		return result{}
	}
}

// setFidx replaces drive-scsi0.img.fidx with an index of digests whose
// header claims size and chunkSize (written by hand: the index writer refuses
// such headers) and fixes the manifest entry, so only the header is hostile.
func setFidx(t *testing.T, b *base, size, chunkSize uint64, digests []crypto.Digest) {
	t.Helper()
	raw, err := index.BuildFixed(index.FixedHeader{Size: uint64(len(digests)) * index.MinChunkSize, ChunkSize: index.MinChunkSize}, digests)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(raw[0x40:], size)
	binary.LittleEndian.PutUint64(raw[0x48:], chunkSize)
	writeFile(t, b.fidx(), raw)
	sum := sha256.New()
	for _, d := range digests {
		sum.Write(d[:])
	}
	fixture.RewriteManifest(t, b.store, b.snap, func(m *index.Manifest) {
		for i := range m.Files {
			if m.Files[i].Filename == "drive-scsi0.img.fidx" {
				m.Files[i].Size = size
				copy(m.Files[i].Csum[:], sum.Sum(nil))
			}
		}
	})
}

// TestHostileDatastore: inputs found by trying to break pbsdirect. Each must
// end quickly with exit 1, a clear error, and no target left behind.
func TestHostileDatastore(t *testing.T) {
	type tc struct {
		name  string
		setup func(t *testing.T, b *base)
		args  func(b *base, target string) []string
		want  string
	}
	restoreArgs := func(b *base, target string) []string {
		return []string{"restore", "--store", b.store, snap0, "drive-scsi0", target}
	}
	verifyArgs := func(b *base, _ string) []string { return []string{"verify", "--store", b.store, snap0} }
	fifo := func(p func(b *base) string) func(t *testing.T, b *base) {
		return func(t *testing.T, b *base) {
			remove(t, p(b))
			if err := syscall.Mkfifo(p(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	huge := func(size, chunkSize uint64, n int) func(t *testing.T, b *base) {
		return func(t *testing.T, b *base) {
			setFidx(t, b, size, chunkSize, b.digests[:n])
		}
	}
	for _, c := range []tc{
		{"huge-chunk-size-restore", huge(1<<50, 1<<50, 1), restoreArgs, "chunk size"},
		{"huge-chunk-size-verify", huge(1<<50, 1<<50, 1), verifyArgs, "chunk size"},
		{"size-near-2^64", huge(^uint64(0), 1<<62, 4), verifyArgs, "chunk size"},
		{"fifo-chunk", fifo((*base).chunk), restoreArgs, "not a regular file"},
		{"fifo-index", fifo((*base).fidx), verifyArgs, "not a regular file"},
		{"fifo-manifest", fifo((*base).manifest), verifyArgs, "not a regular file"},
		{"sparse-100G-manifest", func(t *testing.T, b *base) {
			if err := os.Truncate(b.manifest(), 100<<30); err != nil {
				t.Fatal(err)
			}
		}, verifyArgs, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBase(t, false).clone(t)
			c.setup(t, b)
			target := filepath.Join(t.TempDir(), "img")
			r := pbsWithin(t, 20*time.Second, c.args(b, target)...)
			if r.code != 1 || !strings.Contains(r.out+r.err, c.want) {
				t.Errorf("want exit 1 mentioning %q: %v", c.want, r)
			}
			// A restore that stopped on a bad chunk keeps its partial
			// output and journal for --resume, and says so; nothing else.
			kept := map[string]bool{filepath.Base(filetarget.PartialPath(target)): true, ".img.pbsdirect-journal": true}
			for _, e := range func() []os.DirEntry { ents, _ := os.ReadDir(filepath.Dir(target)); return ents }() {
				if !kept[e.Name()] || !strings.Contains(r.err, "--resume") {
					t.Errorf("left beside the target: %s: %v", e.Name(), r)
				}
			}
		})
	}
}

// TestVerifyLengthConfusion: a digest verified at one length proves nothing
// for an archive that claims another; verify must fail in either order.
func TestVerifyLengthConfusion(t *testing.T) {
	content := bytes.Repeat([]byte("pbsdirect"), 1000) // 9000 bytes
	d := (*crypto.Config)(nil).ChunkDigest(content)
	for _, order := range [][2]uint64{{9000, 5000}, {5000, 9000}} {
		b := newBase(t, false).clone(t)
		os.MkdirAll(filepath.Dir(fixture.ChunkPath(b.store, d)), 0o755)
		writeFile(t, fixture.ChunkPath(b.store, d), fixture.Encode(t, content, nil, true))
		fixture.RewriteManifest(t, b.store, b.snap, func(m *index.Manifest) {
			for i, end := range order {
				raw, err := index.BuildDynamic(index.DynamicHeader{}, []index.DynamicEntry{{End: end, Digest: d}})
				if err != nil {
					t.Fatal(err)
				}
				name := []string{"a.pxar.didx", "b.pxar.didx"}[i]
				writeFile(t, fixture.SnapPath(b.store, b.snap, name), raw)
				x, _ := index.ParseDynamic(raw)
				m.Files = append(m.Files, index.FileInfo{Filename: name, CryptMode: index.CryptNone, Size: end, Csum: x.Csum})
			}
		})
		r := pbsWithin(t, 30*time.Second, "verify", "--output-format", "json", "--store", b.store, snap0)
		if r.code != 1 {
			t.Errorf("lengths %v: verify must fail: %v", order, r)
		}
		// The archive that claims 5000 bytes is the damaged one, naming
		// the chunk at [0,5000); the 9000-byte one is fine.
		var rep verify.Report
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil || len(rep.Snapshots) != 1 {
			t.Fatalf("lengths %v: report: %v: %v", order, err, r)
		}
		got := map[string]verify.ArchiveResult{}
		for _, a := range rep.Snapshots[0].Archives {
			got[a.Archive] = a
		}
		short, long := "a.pxar.didx", "b.pxar.didx"
		if order[0] == 9000 {
			short, long = long, short
		}
		if a := got[long]; !a.OK || a.ChunksChecked != 1 {
			t.Errorf("lengths %v: %s (9000 bytes) must verify: %+v", order, long, a)
		}
		a := got[short]
		if a.OK || len(a.Damaged) != 1 {
			t.Fatalf("lengths %v: %s (5000 bytes) must list one damaged chunk: %+v", order, short, a)
		}
		if dc := a.Damaged[0]; dc.Digest != d.String() || dc.Length != 5000 || fmt.Sprint(dc.Offsets) != "[0]" || dc.Error == "" {
			t.Errorf("lengths %v: damaged chunk %+v, want %s at [0] length 5000", order, dc, d)
		}
	}
}

// TestBlobTargets: a blob is restored only to a regular file (or a new
// path), never into a device, FIFO or directory, even with --force.
func TestBlobTargets(t *testing.T) {
	b := newBase(t, false)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	for _, target := range []string{"/dev/null", filepath.Join(dir, "fifo"), filepath.Join(dir, "adir")} {
		r := pbsWithin(t, 10*time.Second, "restore", "--force", "--store", b.store, snap0, "qemu-server.conf", target)
		if r.code != 2 || !strings.Contains(r.err, "not a regular file") {
			t.Errorf("%s: want exit 2 (usage), not a regular file: %v", target, r)
		}
	}
}
