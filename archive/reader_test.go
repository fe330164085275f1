package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
)

const chunk64K = 64 << 10

// image is 2 MiB + a few bytes: data, a zero run of several whole chunks,
// text with a repeated (deduplicated) stretch, and a short last chunk.
func image() []byte {
	return fixture.Build(5,
		fixture.Region{Kind: fixture.Random, Len: 300 << 10},
		fixture.Region{Kind: fixture.Zero, Len: 700 << 10},
		fixture.Region{Kind: fixture.Text, Len: 1<<20 + 1234})
}

type base struct {
	dir  string
	snap index.Snapshot
	data []byte
	cc   *crypto.Config
}

// newBase backs image() up into a fresh datastore (encrypted with cc when
// non-nil) in chunks of 64 KiB.
func newBase(t *testing.T, cc *crypto.Config) *base {
	t.Helper()
	b := &base{dir: fixture.NewStore(t), snap: fixture.Snap(t, "", "vm", "100", fixture.T0), data: image(), cc: cc}
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", b.data)
	fixture.Backup(t, b.dir, b.snap, backup.Options{Key: cc, ChunkSize: chunk64K}, backup.Source{Name: "drive-scsi0.img", Path: img})
	return b
}

func (b *base) open(t *testing.T, store chunkstore.Store, cc *crypto.Config, opts archive.Options) (*archive.Reader, error) {
	t.Helper()
	m := fixture.Manifest(t, b.dir, b.snap)
	r, err := archive.Open(context.Background(), store, b.snap.Dir(), m, "drive-scsi0.img.fidx", cc, opts)
	if err == nil {
		t.Cleanup(func() { r.Close() })
	}
	return r, err
}

// TestReadAt: any range reads back the image's bytes, plain and encrypted,
// with a cache large enough for all and one of two chunks, and zero chunks
// are never fetched.
func TestReadAt(t *testing.T) {
	_, key := fixture.Key(t, 3)
	for _, c := range []struct {
		name  string
		cc    *crypto.Config
		cache int64
	}{
		{"plain", nil, 0},
		{"encrypted", key, 0},
		{"small-cache", nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBase(t, c.cc)
			cs := fixture.NewCountingStore(fixture.OpenStore(t, b.dir))
			r, err := b.open(t, cs, c.cc, archive.Options{CacheSize: c.cache, Fetchers: 4})
			if err != nil {
				t.Fatal(err)
			}
			if r.Size() != int64(len(b.data)) {
				t.Fatalf("size %d, want %d", r.Size(), len(b.data))
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				off := rng.Int64N(int64(len(b.data)) + 10)
				n := rng.IntN(300 << 10)
				p := make([]byte, n)
				got, err := r.ReadAt(p, off)
				want := b.data[min(off, int64(len(b.data))):min(off+int64(n), int64(len(b.data)))]
				if got != len(want) || !bytes.Equal(p[:got], want) {
					t.Fatalf("ReadAt(%d bytes at %d): %d bytes, err %v; content differs", n, off, got, err)
				}
				if got < n && err != io.EOF {
					t.Fatalf("short read at the end: err %v, want io.EOF", err)
				}
				if got == n && err != nil {
					t.Fatalf("full read: err %v", err)
				}
			}
			// Whole image through a SectionReader.
			all, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
			if err != nil || !bytes.Equal(all, b.data) {
				t.Fatalf("sequential read: err %v, equal %v", err, bytes.Equal(all, b.data))
			}
			if n := cs.Count(fixture.ZeroDigest(chunk64K, c.cc)); n != 0 {
				t.Errorf("zero chunk fetched %d times", n)
			}
			if c.cache == 0 {
				for d, n := range cs.Reads {
					if n != 1 {
						t.Errorf("chunk %s fetched %d times with a cache holding all", d, n)
					}
				}
			}
		})
	}
}

// TestConcurrentReaders: many goroutines reading the same chunks fetch each
// chunk once.
func TestConcurrentReaders(t *testing.T) {
	b := newBase(t, nil)
	cs := fixture.NewCountingStore(fixture.OpenStore(t, b.dir))
	r, err := b.open(t, cs, nil, archive.Options{Fetchers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range 16 {
		wg.Go(func() {
			p := make([]byte, 4096)
			for i := range 100 {
				off := int64((g*7919 + i*104729) % (len(b.data) - len(p)))
				if n, err := r.ReadAt(p, off); err != nil || n != len(p) || !bytes.Equal(p, b.data[off:off+int64(len(p))]) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d reads wrong", bad.Load())
	}
	for d, n := range cs.Reads {
		if n != 1 {
			t.Errorf("chunk %s fetched %d times", d, n)
		}
	}
}

// TestReadAhead: a sequential reader gets chunks read ahead; a random
// read of a cold chunk fetches that chunk only.
func TestReadAhead(t *testing.T) {
	b := newBase(t, nil)
	cs := fixture.NewCountingStore(fixture.OpenStore(t, b.dir))
	r, err := b.open(t, cs, nil, archive.Options{Fetchers: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	if _, err := r.ReadAt(p, 1<<20+5000); err != nil {
		t.Fatal(err)
	}
	r.Close() // waits for any read-ahead
	if n := r.Stats().Fetched.Load(); n != 1 {
		t.Errorf("one random 4 KiB read fetched %d chunks, want 1", n)
	}

	// Reads in chunks 0 and 1 make a stream: the next 4 positions are read
	// ahead without any further read, chunks 2, 3 and 4 (5 is a zero chunk).
	r, err = b.open(t, cs, nil, archive.Options{Fetchers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 40 << 10, 70 << 10} {
		if _, err := r.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats().ReadAhead.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.Stats().ReadAhead.Load(); n != 3 {
		t.Errorf("sequential reads: %d chunks read ahead, want 3 (fetched %d)", n, r.Stats().Fetched.Load())
	}
	// They are served from the cache.
	before := r.Stats().Fetched.Load()
	for off := int64(128 << 10); off < 6*chunk64K; off += 16 << 10 {
		if _, err := r.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Stats().Fetched.Load() - before; n != 0 {
		t.Errorf("%d chunks fetched again after they were read ahead", n)
	}
}

// TestExtents: zero chunks are reported as zero extents, the rest as data.
func TestExtents(t *testing.T) {
	b := newBase(t, nil)
	r, err := b.open(t, fixture.OpenStore(t, b.dir), nil, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Extents(0, r.Size())
	// The zero run [300 KiB, 1000 KiB) covers chunks 5 … 14 whole:
	// [320 KiB, 960 KiB).
	want := []archive.Extent{
		{Offset: 0, Length: 320 << 10},
		{Offset: 320 << 10, Length: 640 << 10, Zero: true},
		{Offset: 960 << 10, Length: int64(len(b.data)) - 960<<10},
	}
	if len(got) != len(want) {
		t.Fatalf("extents %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("extent %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := r.Extents(400<<10, 10); len(got) != 1 || !got[0].Zero || got[0].Offset != 400<<10 || got[0].Length != 10 {
		t.Errorf("Extents(400 KiB, 10) = %+v", got)
	}
}

// TestDamagedChunk: a chunk that fails its check fails only the reads that
// touch it, with a ChunkError naming its digest, and is logged once however
// many reads fail on it; the error says it was logged. Only verified chunks
// count as fetched (chunks and encoded bytes); failed reads count apart.
func TestDamagedChunk(t *testing.T) {
	b := newBase(t, nil)
	_, digests := fixture.Digests(t, fixture.SnapPath(b.dir, b.snap, "drive-scsi0.img.fidx"))
	bad := digests[2] // bytes [128 KiB, 192 KiB)
	fixture.FlipByte(t, fixture.ChunkPath(b.dir, bad), -1)
	var logged []error
	var mu sync.Mutex
	cs := fixture.NewCountingStore(fixture.OpenStore(t, b.dir))
	r, err := b.open(t, cs, nil, archive.Options{Log: func(err error) {
		mu.Lock()
		logged = append(logged, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	for _, off := range []int64{128 << 10, 190 << 10, 150 << 10} {
		_, err := r.ReadAt(p, off)
		var ce *restore.ChunkError
		if !errors.As(err, &ce) || ce.Digest != bad || !errors.Is(err, chunkstore.ErrCRC) {
			t.Errorf("read at %d: %v, want a ChunkError for %s (CRC)", off, err, bad)
		}
		var l interface{ Logged() bool }
		if !errors.As(err, &l) || !l.Logged() {
			t.Errorf("read at %d: error %v does not say it was logged", off, err)
		}
	}
	// A read that ends in the damaged chunk returns the bytes before it.
	q := make([]byte, 8192)
	n, err := r.ReadAt(q, 128<<10-4096)
	if err == nil || n != 4096 || !bytes.Equal(q[:n], b.data[128<<10-4096:128<<10]) {
		t.Errorf("read across the damaged chunk: %d bytes, %v", n, err)
	}
	for _, off := range []int64{0, 192 << 10, 1 << 20} {
		if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, b.data[off:off+4096]) {
			t.Errorf("read at %d beside the damaged chunk: %v", off, err)
		}
	}
	mu.Lock()
	if len(logged) != 1 {
		t.Errorf("logged %d times, want once: %v", len(logged), logged)
	}
	mu.Unlock()
	st := r.Stats()
	if got := st.FailedReads.Load(); got != 4 {
		t.Errorf("%d failed reads counted, want 4", got)
	}
	if got := st.FailedChunks.Load(); got != 1 {
		t.Errorf("%d failed chunks counted, want 1", got)
	}
	// Fetched counts the good chunks read (read-ahead included) and their
	// encoded bytes, never the damaged chunk's attempts.
	good := func() (n, size uint64) {
		for d := range cs.Counts() {
			if d != bad {
				fi, err := os.Stat(fixture.ChunkPath(b.dir, d))
				if err != nil {
					t.Fatal(err)
				}
				n, size = n+1, size+uint64(fi.Size())
			}
		}
		return n, size
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, size := good()
		if st.Fetched.Load() == n && st.FetchedBytes.Load() == size {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fetched %d chunks, %d encoded bytes; want the %d good chunks read, %d bytes (the damaged one read %d times)",
				st.Fetched.Load(), st.FetchedBytes.Load(), n, size, cs.Count(bad))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadAheadFailure: a chunk that only read-ahead failed to load is
// neither logged nor counted as a failed read; the first read that asks
// for its bytes fails, and logs it, once.
func TestReadAheadFailure(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, path string)
		cause error
	}{
		{"damaged", func(t *testing.T, path string) { fixture.FlipByte(t, path, -1) }, chunkstore.ErrCRC},
		{"missing", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, chunkstore.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBase(t, nil)
			_, digests := fixture.Digests(t, fixture.SnapPath(b.dir, b.snap, "drive-scsi0.img.fidx"))
			bad := digests[3] // bytes [192 KiB, 256 KiB)
			c.spoil(t, fixture.ChunkPath(b.dir, bad))
			var logged atomic.Int32
			cs := fixture.NewCountingStore(fixture.OpenStore(t, b.dir))
			r, err := b.open(t, cs, nil, archive.Options{Fetchers: 4, Log: func(error) { logged.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			// Reads in chunks 0 and 1 make a stream: chunks 2, 3 and 4 are
			// read ahead, and 3 fails.
			p := make([]byte, 4096)
			for _, off := range []int64{0, 40 << 10, 70 << 10} {
				if _, err := r.ReadAt(p, off); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for (cs.Count(bad) == 0 || r.Stats().ReadAhead.Load() < 2) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if cs.Count(bad) == 0 {
				t.Fatal("the damaged chunk was not read ahead")
			}
			time.Sleep(100 * time.Millisecond) // the failed load ends
			st := r.Stats()
			if logged.Load() != 0 || st.FailedReads.Load() != 0 || st.FailedChunks.Load() != 0 {
				t.Errorf("read-ahead failure logged %d times, counted as %d failed reads of %d chunks; want none",
					logged.Load(), st.FailedReads.Load(), st.FailedChunks.Load())
			}
			// A reader asks for the bytes: the read fails and is logged.
			for range 2 {
				_, err := r.ReadAt(p, 200<<10)
				var ce *restore.ChunkError
				if !errors.As(err, &ce) || ce.Digest != bad || !errors.Is(err, c.cause) || ce.Offsets[0] != 192<<10 {
					t.Errorf("read of the chunk: %v, want a ChunkError for %s at 192 KiB (%v)", err, bad, c.cause)
				}
			}
			if logged.Load() != 1 || st.FailedReads.Load() != 2 || st.FailedChunks.Load() != 1 {
				t.Errorf("after two reads: logged %d times, %d failed reads of %d chunks; want once, 2, 1",
					logged.Load(), st.FailedReads.Load(), st.FailedChunks.Load())
			}
		})
	}
}

// TestEncryptedNeedsKey: an encrypted archive is refused without its key.
func TestEncryptedNeedsKey(t *testing.T) {
	_, key := fixture.Key(t, 9)
	b := newBase(t, key)
	if _, err := b.open(t, fixture.OpenStore(t, b.dir), nil, archive.Options{}); !errors.Is(err, index.ErrMissingKey) {
		t.Fatalf("open without key: %v, want ErrMissingKey", err)
	}
}

// TestDynamic: a dynamic index with chunks of different lengths, one used
// twice, reads back at any offset.
func TestDynamic(t *testing.T) {
	b := newBase(t, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	var data []byte
	var entries []index.DynamicEntry
	pieces := [][]byte{}
	for _, n := range []int{1000, 70000, 1, 33333, 120000} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.IntN(7))
		}
		pieces = append(pieces, p)
	}
	pieces = append(pieces, pieces[1]) // dedup
	for _, p := range pieces {
		data = append(data, p...)
		d := (*crypto.Config)(nil).ChunkDigest(p)
		entries = append(entries, index.DynamicEntry{End: uint64(len(data)), Digest: d})
		cp := fixture.ChunkPath(b.dir, d)
		if err := os.MkdirAll(filepath.Dir(cp), 0o755); err != nil {
			t.Fatal(err)
		}
		fixture.WriteFile(t, filepath.Dir(cp), filepath.Base(cp), fixture.Encode(t, p, nil, true))
	}
	raw, err := index.BuildDynamic(index.DynamicHeader{}, entries)
	if err != nil {
		t.Fatal(err)
	}
	fixture.WriteFile(t, filepath.Dir(fixture.SnapPath(b.dir, b.snap, "x")), "root.pxar.didx", raw)
	x, _ := index.ParseDynamic(raw)
	fixture.RewriteManifest(t, b.dir, b.snap, func(m *index.Manifest) {
		m.Files = append(m.Files, index.FileInfo{Filename: "root.pxar.didx", CryptMode: index.CryptNone, Size: uint64(len(data)), Csum: x.Csum})
	})
	m := fixture.Manifest(t, b.dir, b.snap)
	r, err := archive.Open(context.Background(), fixture.OpenStore(t, b.dir), b.snap.Dir(), m, "root.pxar.didx", nil, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != int64(len(data)) {
		t.Fatalf("size %d, want %d", r.Size(), len(data))
	}
	for range 300 {
		off := rng.Int64N(int64(len(data)))
		p := make([]byte, rng.IntN(100000)+1)
		n, err := r.ReadAt(p, off)
		want := data[off:min(off+int64(len(p)), int64(len(data)))]
		if n != len(want) || !bytes.Equal(p[:n], want) || (n < len(p) && err != io.EOF) {
			t.Fatalf("ReadAt(%d at %d): %d, %v", len(p), off, n, err)
		}
	}
	if ext := r.Extents(0, r.Size()); len(ext) != 1 || ext[0].Zero {
		t.Errorf("dynamic extents %+v, want one data extent", ext)
	}
}

// slowStore delays every chunk read, so that read-ahead and the reads it
// runs ahead of overlap.
type slowStore struct{ *fixture.CountingStore }

func (s slowStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	time.Sleep(3 * time.Millisecond)
	return s.CountingStore.ReadChunk(ctx, d, buf, limit)
}

// TestFetchOnce: with many fetchers and slow chunk reads, every chunk is
// fetched once, whatever the read pattern: one sequential stream (small
// reads and reads spanning chunks), two streams interleaved (as a pxar
// decoder's metadata and content cursors), four concurrent streams, random
// reads. The budget of 24 chunks against 32 fetchers is the default
// 256 MiB against a pxar archive's chunks of 10 MiB and more; random reads
// get a cache holding every chunk. The image is four runs of distinct
// random chunks apart by zero runs longer than any read-ahead, so that no
// chunk is wanted again after the cache let it go.
func TestFetchOnce(t *testing.T) {
	const run, gap = 10 * chunk64K, 16 * chunk64K
	b := &base{dir: fixture.NewStore(t), snap: fixture.Snap(t, "", "vm", "100", fixture.T0), data: fixture.Build(9,
		fixture.Region{Kind: fixture.Random, Len: run}, fixture.Region{Kind: fixture.Zero, Len: gap},
		fixture.Region{Kind: fixture.Random, Len: run}, fixture.Region{Kind: fixture.Zero, Len: gap},
		fixture.Region{Kind: fixture.Random, Len: run}, fixture.Region{Kind: fixture.Zero, Len: gap},
		fixture.Region{Kind: fixture.Random, Len: run})}
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", b.data)
	fixture.Backup(t, b.dir, b.snap, backup.Options{ChunkSize: chunk64K}, backup.Source{Name: "drive-scsi0.img", Path: img})
	size := int64(len(b.data))
	runAt := func(i int64) int64 { return i * (run + gap) }
	check := func(r *archive.Reader, p []byte, off int64) error {
		n, err := r.ReadAt(p, off)
		if err != nil && err != io.EOF || !bytes.Equal(p[:n], b.data[off:off+int64(n)]) {
			return fmt.Errorf("read of %d bytes at %d: %d bytes, %v; content equal %v", len(p), off, n, err, bytes.Equal(p[:n], b.data[off:off+int64(n)]))
		}
		return nil
	}
	sequential := func(r *archive.Reader, from, to int64, step int) error {
		p := make([]byte, step)
		for off := from; off < to; off += int64(step) {
			if err := check(r, p[:min(int64(step), to-off)], off); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range []struct {
		name  string
		cache int64
		read  func(r *archive.Reader) error
	}{
		{"sequential", 24 * chunk64K, func(r *archive.Reader) error { return sequential(r, 0, size, 4096) }},
		{"sequential-spanning", 24 * chunk64K, func(r *archive.Reader) error { return sequential(r, 0, size, 100<<10) }},
		{"interleaved", 24 * chunk64K, func(r *archive.Reader) error {
			// One cursor through the first run, one through the third.
			p := make([]byte, 8192)
			for off := int64(0); off < run; off += int64(len(p)) {
				for _, at := range []int64{off, runAt(2) + off} {
					if err := check(r, p, at); err != nil {
						return err
					}
				}
			}
			return nil
		}},
		{"concurrent", 24 * chunk64K, func(r *archive.Reader) error {
			var g errgroup.Group
			for i := range int64(4) {
				g.Go(func() error { return sequential(r, runAt(i), runAt(i)+run, 16<<10) })
			}
			return g.Wait()
		}},
		{"random", 0, func(r *archive.Reader) error {
			var g errgroup.Group
			for i := range 8 {
				g.Go(func() error {
					rng := rand.New(rand.NewPCG(uint64(i), 7))
					p := make([]byte, 96<<10)
					for range 50 {
						if err := check(r, p, rng.Int64N(size-int64(len(p)))); err != nil {
							return err
						}
					}
					return nil
				})
			}
			return g.Wait()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fixture.NewCountingStore(fixture.OpenStore(t, b.dir))
			r, err := b.open(t, slowStore{cs}, nil, archive.Options{Fetchers: 32, CacheSize: c.cache})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.read(r); err != nil {
				t.Fatal(err)
			}
			r.Close() // waits for read-ahead
			for d, n := range cs.Counts() {
				if n != 1 {
					t.Errorf("chunk %s fetched %d times", d, n)
				}
			}
			if got, want := r.Stats().Fetched.Load(), uint64(len(cs.Counts())); got != want {
				t.Errorf("Stats().Fetched %d, %d distinct chunks fetched", got, want)
			}
		})
	}
}
