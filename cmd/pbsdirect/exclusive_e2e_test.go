package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestConcurrentRestores: two restores into one target — an existing file
// (both --force), a new file, a block device — never both succeed. The
// first is slowed down (its chunk reads go through a proxy that delays
// them); the second starts once the first is fetching chunks and must fail
// at once, naming the target and the first's PID, without fetching a chunk
// (its chunk reads are counted by a second proxy). The first then finishes
// with the exact image.
func TestConcurrentRestores(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(31,
		fixture.Region{Kind: fixture.Random, Len: 3 << 20},
		fixture.Region{Kind: fixture.Zero, Len: 1 << 20},
		fixture.Region{Kind: fixture.Random, Len: 2 << 20})
	local := fixture.NewStore(t)
	backupImage(t, local, data, "--chunk-size", "1024")
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "plainbkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "127.0.0.1:1")
	chunkGET := faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"}
	slowRule := chunkGET
	slowRule.Delay = 300 * time.Millisecond
	slow := bktProxy(t, s3.Endpoint, 0, slowRule)
	counted := bktProxy(t, s3.Endpoint, 0, chunkGET)
	restoreVia := func(p *faultproxy.Proxy, target string) []string {
		return []string{"restore", "--force", "--fetchers", "1", "--jobs", "1", "--store", "s3://plainbkt/ds", "--bucket-layout", "plain",
			"--s3-endpoint", p.URL, snap0, "drive-scsi0", target}
	}
	pid := fmt.Sprintf("PID %d", os.Getpid())

	for _, kind := range []string{"existing-file", "new-file", "block-device"} {
		t.Run(kind, func(t *testing.T) {
			var target string
			switch kind {
			case "existing-file":
				target = fixture.WriteFile(t, t.TempDir(), "disk.raw", []byte("an older image"))
			case "new-file":
				target = filepath.Join(t.TempDir(), "disk.raw")
			default:
				target, _ = fixture.LoopDevice(t, int64(len(data)), []byte{0xee})
			}
			before := slow.Matched()[0]
			var first result
			var wg sync.WaitGroup
			wg.Go(func() { first = pbs(t, restoreVia(slow, target)...) })
			deadline := time.Now().Add(30 * time.Second)
			for slow.Matched()[0] == before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			countedBefore := counted.Matched()[0]
			start := time.Now()
			second := pbs(t, restoreVia(counted, target)...)
			el := time.Since(start)
			wg.Wait()
			if first.code != 0 {
				t.Fatalf("first restore: %v", first)
			}
			if second.code != 3 {
				t.Fatalf("second restore into the same target: want exit 3 (busy), got %v", second)
			}
			for _, w := range []string{target, "in use", pid} {
				if !strings.Contains(second.err, w) {
					t.Errorf("second restore's error lacks %q: %v", w, second)
				}
			}
			if strings.Contains(second.err, "partial") {
				t.Errorf("error names an internal file: %v", second)
			}
			if n := counted.Matched()[0] - countedBefore; n != 0 {
				t.Errorf("the refused restore fetched %d chunks", n)
			}
			// At once: no chunk fetched (above); the deadline only
			// catches a wait for the first restore (chunks × 300ms).
			if el > 20*time.Second {
				t.Errorf("the refused restore took %v, not at once", el)
			}
			if kind == "block-device" {
				got := make([]byte, len(data))
				f, err := os.Open(target)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.ReadAt(got, 0); err != nil {
					t.Fatal(err)
				}
				fixture.EqualBytes(t, target, got, data)
				return
			}
			fixture.Equal(t, target, data)
			if ents, _ := os.ReadDir(filepath.Dir(target)); len(ents) != 1 {
				t.Errorf("files left beside the target: %v", ents)
			}
		})
	}
}

// TestConcurrentBackups: two backups of one group at the same snapshot time,
// run at once, into a directory store, an S3 bucket (versitygw) and a GCS
// bucket (emulator): exactly one succeeds, the other fails saying the
// snapshot exists or is being written, and exactly one snapshot is listed
// and restores to the image.
func TestConcurrentBackups(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Build(32, fixture.Region{Kind: fixture.Random, Len: 6 << 20}, fixture.Region{Kind: fixture.Zero, Len: 2 << 20})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "cbkt")
	gcs := testenv.StartGCS(t, "gcb")
	bktSetEnv(t, gcs.Host)
	for _, c := range []struct {
		name, store string
		flags       []string
	}{
		{"directory", fixture.NewStore(t), nil},
		{"s3", "s3://cbkt/store", []string{"--s3-endpoint", s3.Endpoint}},
		{"gcs", "gs://gcb/store", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for round := range 3 { // a new snapshot time each round
				btime := fmt.Sprintf("2026-11-29T1%d:00:00Z", round)
				args := append([]string{"backup", "--store", c.store, "--backup-type", "vm", "--backup-id", "100",
					"--backup-time", btime, "--chunk-size", "256"}, c.flags...)
				args = append(args, "drive-scsi0.img:"+img)
				var res [2]result
				var wg sync.WaitGroup
				for i := range res {
					wg.Go(func() { res[i] = pbs(t, args...) })
				}
				wg.Wait()
				ok := 0
				for _, r := range res {
					switch {
					case r.code == 0:
						ok++
					case !strings.Contains(r.err, "already exists") && !strings.Contains(r.err, "locked") && !strings.Contains(r.err, "is writing it"):
						t.Errorf("round %d: the refused backup does not say why: %v", round, r)
					}
				}
				if ok != 1 {
					t.Fatalf("round %d: %d of 2 concurrent backups succeeded:\n%v\n%v", round, ok, res[0], res[1])
				}
				l := bktList(t, c.store, c.flags...)
				if len(l) != round+1 {
					t.Fatalf("round %d: snapshots %v", round, bktNames(l))
				}
				target := filepath.Join(t.TempDir(), "r.raw")
				mustOK(t, append(append([]string{"restore", "--store", c.store}, c.flags...), "vm/100/"+btime, "drive-scsi0", target)...)
				fixture.Equal(t, target, data)
			}
		})
	}
}

// TestThinBlockDevice: a restore onto a thin device (a loop device over a
// sparse file, with stale data in what are zero ranges of the image) leaves
// the zero ranges unallocated and reading as zeros: the backing file holds
// no more than the image's data + 1 MiB, and the device the exact image.
func TestThinBlockDevice(t *testing.T) {
	const size = 64 << 20
	data := fixture.Build(33,
		fixture.Region{Kind: fixture.Random, Len: 4 << 20},
		fixture.Region{Kind: fixture.Zero, Len: 28 << 20},
		fixture.Region{Kind: fixture.Random, Len: 4 << 20},
		fixture.Region{Kind: fixture.Zero, Len: 28 << 20})
	store := fixture.NewStore(t)
	backupImage(t, store, data)
	dev, backing := fixture.LoopDevice(t, size, nil)
	stale := make([]byte, 2<<20)
	for i := range stale {
		stale[i] = 0x5a
	}
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{10 << 20, 50 << 20} { // stale data in zero ranges
		if _, err := f.WriteAt(stale, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := restoreJSON(t, "--store", store, snap0, "drive-scsi0", dev)
	if s.ZeroRanges != "zeroed" {
		t.Errorf("zero ranges: %q", s.ZeroRanges)
	}
	got := make([]byte, size)
	g, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	fixture.EqualBytes(t, dev, got, data)
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	if alloc := statT(t, backing).Blocks * 512; alloc > 8<<20+1<<20 {
		t.Errorf("thin backing file has %d bytes allocated for 8 MiB of data", alloc)
	}
}

// TestTargetRefusedBeforeWork: a dangling link at TARGET, a link to a file,
// a missing directory and a qcow2 volume are
// refused before any chunk is read — the store has lost every chunk, so a
// refusal found later would name a chunk — with the user's path, never the
// partial file's name; an existing target is left as it was.
func TestTargetRefusedBeforeWork(t *testing.T) {
	data := zeroMiddle(34)
	store := fixture.NewStore(t)
	backupImage(t, store, data)
	chunks, _ := filepath.Glob(filepath.Join(store, ".chunks", "*", "*"))
	for _, c := range chunks {
		os.Remove(c)
	}
	dir := t.TempDir()
	dangling := filepath.Join(dir, "dangling.raw")
	os.Symlink(filepath.Join(dir, "gone.raw"), dangling)
	real := fixture.WriteFile(t, dir, "real.raw", []byte("keep"))
	link := filepath.Join(dir, "link.raw")
	os.Symlink(real, link)
	qcow := fixture.WriteFile(t, dir, "vm-100-disk-0.qcow2", append([]byte("QFI\xfb\x00\x00\x00\x03"), make([]byte, 4096)...))
	missing := filepath.Join(dir, "nodir", "sub", "t.raw")
	for _, c := range []struct {
		name   string
		target string
		force  bool
		words  []string
	}{
		{"dangling-link", dangling, true, []string{dangling, "symbolic link", "dangling"}},
		{"link-to-file", link, true, []string{link, "symbolic link", "--follow-symlinks"}},
		{"missing-directory", missing, false, []string{missing, "no such file or directory"}},
		{"qcow2", qcow, true, []string{qcow, "qcow2", "qemu-img convert"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"restore", "--store", store, snap0, "drive-scsi0", c.target}
			if c.force {
				args = append(args[:1], append([]string{"--force"}, args[1:]...)...)
			}
			r := mustFail(t, 2, c.words, args...)
			for _, bad := range []string{"partial", "chunk", "appeared"} {
				if strings.Contains(r.err, bad) {
					t.Errorf("message says %q: %v", bad, r)
				}
			}
		})
	}
	fixture.Equal(t, real, []byte("keep"))
	if st, err := os.Lstat(dangling); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("dangling link changed: %v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone.raw")); err == nil {
		t.Error("restore created the file a dangling link names")
	}
}

// TestPartialImageSaid: a --force restore that fails after writing started
// (a chunk is missing) says that the existing target now holds a partial
// image; a new file's partial output is kept under its partial name, never
// the target's, with its journal, for --resume.
func TestPartialImageSaid(t *testing.T) {
	data := zeroMiddle(35)
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "1024")
	chunks, _ := filepath.Glob(filepath.Join(store, ".chunks", "*", "*"))
	var biggest string
	var size int64
	for _, c := range chunks {
		if st, err := os.Stat(c); err == nil && st.Size() > size {
			biggest, size = c, st.Size()
		}
	}
	os.Remove(biggest) // a data chunk, not the zero chunk
	dir := t.TempDir()
	old := fixture.WriteFile(t, dir, "old.raw", []byte("an older image"))
	mustFail(t, 1, []string{old, "now holds a partial image"}, "restore", "--force", "--store", store, snap0, "drive-scsi0", old)
	fresh := filepath.Join(dir, "new.raw")
	r := mustFail(t, 1, []string{fresh, "partial output", "--resume"}, "restore", "--store", store, snap0, "drive-scsi0", fresh)
	if strings.Contains(r.err, "partial image") {
		t.Errorf("a new file's failed restore speaks of a partial image: %v", r)
	}
	noFile(t, fresh)
	for _, p := range []string{filetarget.PartialPath(fresh), filepath.Join(dir, ".new.raw.pbsdirect-journal")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not kept for --resume: %v", err)
		}
	}
}
