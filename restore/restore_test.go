package restore_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
)

const cs = restoretest.ChunkSize

// memTarget collects writes in memory and records zero calls.
type memTarget struct {
	mu     sync.Mutex
	buf    []byte
	writes map[int64]int
	zeroed int64
	synced bool
	// allocated lists Allocate calls; lateAlloc is set when one came after
	// a write.
	allocated []restore.Range
	lateAlloc bool
}

func newMemTarget(size int) *memTarget {
	b := make([]byte, size)
	for i := range b {
		b[i] = 0xee // garbage: zero ranges must be zeroed by Zero
	}
	return &memTarget{buf: b, writes: map[int64]int{}}
}

func (m *memTarget) WriteAt(p []byte, off int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(m.buf[off:], p)
	m.writes[off]++
	return nil
}

func (m *memTarget) Zero(off, length int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.buf[off : off+length])
	m.zeroed += length
	return nil
}

func (m *memTarget) Allocate(off, length int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.allocated = append(m.allocated, restore.Range{Offset: uint64(off), Length: uint64(length)})
	m.lateAlloc = m.lateAlloc || len(m.writes) > 0
	return nil
}

// ReadBack reads the memory back (restore.ReadBacker): a target without
// a file is read back and resumed through the same capability.
func (m *memTarget) ReadBack(bool) (restore.BackReader, error) { return memReader{m}, nil }

// memReader reads a memTarget's bytes (restore.BackReader).
type memReader struct{ m *memTarget }

func (r memReader) ReadAt(p []byte, off int64) (int, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if off+int64(len(p)) > int64(len(r.m.buf)) {
		return 0, io.ErrUnexpectedEOF
	}
	return copy(p, r.m.buf[off:]), nil
}

func (r memReader) Data(off, length uint64) [][2]uint64 { return [][2]uint64{{off, off + length}} }
func (r memReader) Close() error                        { return nil }

func (m *memTarget) Sync() error      { m.synced = true; return nil }
func (m *memTarget) Close(bool) error { return nil }
func (m *memTarget) Direct() bool     { return false }
func (m *memTarget) bytes() []byte    { return m.buf }
func (m *memTarget) writeCount() int  { return len(m.writes) }
func (m *memTarget) wroteTwice() bool { return anyOver(m.writes, 1) }
func anyOver(w map[int64]int, n int) bool {
	for _, c := range w {
		if c > n {
			return true
		}
	}
	return false
}

// dedupImage has repeated chunks, zero chunks and a short last chunk.
func dedupImage() []byte {
	a := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: cs})
	b := fixture.Build(2, fixture.Region{Kind: fixture.Text, Len: cs})
	z := make([]byte, cs)
	var img []byte
	for _, p := range [][]byte{a, b, a, z, z, a, b, z, a} {
		img = append(img, p...)
	}
	return append(img, b[:777]...)
}

// TestRunFetchesOnce: each unique chunk is read from the store exactly once
// and written to all its offsets; zero chunks are never read (not even when
// the zero chunk is missing from the store) and are zeroed in the target.
func TestRunFetchesOnce(t *testing.T) {
	for _, c := range []struct {
		encrypted bool
		writers   int // 0: the jobs write; otherwise writer goroutines do
	}{{false, 0}, {false, 3}, {true, 0}, {true, 3}} {
		encrypted := c.encrypted
		t.Run(fmt.Sprintf("%s-writers-%d", map[bool]string{false: "plain", true: "encrypted"}[encrypted], c.writers), func(t *testing.T) {
			var cc *crypto.Config
			if encrypted {
				_, cc = fixture.Key(t, 5)
			}
			img := dedupImage()
			dir, snap := restoretest.SnapshotOf(t, img, cc)
			zd := fixture.ZeroDigest(cs, cc)
			if err := os.Remove(fixture.ChunkPath(dir, zd)); err != nil {
				t.Fatalf("zero chunk not stored by backup: %v", err)
			}
			store := fixture.NewCountingStore(fixture.OpenStore(t, dir))
			plan, fi := restoretest.LoadPlan(t, store, snap, cc)
			if plan.ZeroDigest != zd || plan.Size != uint64(len(img)) || plan.ChunkSize != cs {
				t.Fatalf("plan: zero digest %s size %d chunk size %d", plan.ZeroDigest, plan.Size, plan.ChunkSize)
			}
			if len(plan.Chunks) != 3 || plan.DedupHits() != 4 || plan.ZeroBytes != 3*cs || plan.Positions != 10 {
				t.Errorf("plan: %d chunks, %d dedup hits, %d zero bytes, %d positions", len(plan.Chunks), plan.DedupHits(), plan.ZeroBytes, plan.Positions)
			}
			want := map[int][]uint64{cs: nil}
			for _, c := range plan.Chunks {
				want[c.Length] = append(want[c.Length], plan.Offsets(&c)...)
			}
			if len(want[777]) != 1 || want[777][0] != 9*cs || len(want[cs]) != 6 {
				t.Errorf("offsets by length: %v", want)
			}
			tgt := newMemTarget(len(img))
			var st restore.Stats
			err := restore.Run(context.Background(), store, plan, tgt, restore.Options{Jobs: 2, Writers: c.writers, Fetchers: 3, Encrypted: fi.CryptMode == index.CryptEncrypt, Key: cc, Archive: "x"}, &st)
			if err != nil {
				t.Fatal(err)
			}
			fixture.EqualBytes(t, "restored", tgt.bytes(), img)
			if !tgt.synced || tgt.zeroed != 3*cs || tgt.writeCount() != 7 || tgt.wroteTwice() {
				t.Errorf("target: synced %v zeroed %d, %d offsets written, some twice: %v", tgt.synced, tgt.zeroed, tgt.writeCount(), tgt.wroteTwice())
			}
			// a b a z z a b z a + 777 bytes: space is reserved for exactly
			// the data ranges, before anything is written.
			wantAlloc := []restore.Range{{Offset: 0, Length: 3 * cs}, {Offset: 5 * cs, Length: 2 * cs}, {Offset: 8 * cs, Length: cs + 777}}
			if !slices.Equal(tgt.allocated, wantAlloc) || !slices.Equal(slices.Collect(plan.DataRanges()), wantAlloc) || tgt.lateAlloc {
				t.Errorf("allocated %v (data ranges %v), after a write: %v; want %v", tgt.allocated, slices.Collect(plan.DataRanges()), tgt.lateAlloc, wantAlloc)
			}
			for d, n := range store.Reads {
				if n != 1 {
					t.Errorf("chunk %s read %d times", d, n)
				}
			}
			if len(store.Reads) != 3 || store.Count(zd) != 0 {
				t.Errorf("%d chunks read, zero chunk read %d times", len(store.Reads), store.Count(zd))
			}
			if st.Fetched.Load() != 3 || st.DedupHits.Load() != 4 || st.ZeroBytes.Load() != 3*cs ||
				st.DataBytes.Load() != uint64(len(img))-3*cs || st.Failed.Load() != 0 || st.FetchedBytes.Load() == 0 {
				t.Errorf("stats: fetched %d dedup %d zero %d data %d failed %d", st.Fetched.Load(), st.DedupHits.Load(),
					st.ZeroBytes.Load(), st.DataBytes.Load(), st.Failed.Load())
			}
		})
	}
}

// TestZeroChunkDigest checks the zero digests against FORMAT.md §10.2.
func TestZeroChunkDigest(t *testing.T) {
	var keyA [32]byte
	for i := range keyA {
		keyA[i] = byte(i)
	}
	ccA, err := crypto.NewConfig(keyA)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		size uint64
		cc   *crypto.Config
		want string
	}{
		{64 << 10, nil, "de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31"},
		{1 << 20, nil, "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58"},
		{4 << 20, nil, "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"},
		{4 << 20, ccA, "348571e12bbbedb529def1f1394316e338a01945d871df9ef792617ceb13d636"},
	} {
		if got := restore.ZeroChunkDigest(c.size, c.cc); hex.EncodeToString(got[:]) != c.want {
			t.Errorf("zero digest %d (key %v): %s, want %s", c.size, c.cc != nil, got, c.want)
		}
	}
}

// TestRunChunkErrors: every kind of damaged chunk fails the run with a
// ChunkError naming digest, offsets and location and wrapping the right
// sentinel, and nothing is written for it; with KeepGoing every damaged
// chunk is listed.
func TestRunChunkErrors(t *testing.T) {
	_, cc := fixture.Key(t, 6)
	img := fixture.Mixed(640<<10, 3)
	stores := map[bool]string{}
	snaps := map[bool]index.Snapshot{}
	for _, enc := range []bool{false, true} {
		var k *crypto.Config
		if enc {
			k = cc
		}
		stores[enc], snaps[enc] = restoretest.SnapshotOf(t, img, k)
	}
	const victim = 2
	plain := img[victim*cs : (victim+1)*cs]
	other := fixture.Build(9, fixture.Region{Kind: fixture.Random, Len: cs})
	cases := []struct {
		name   string
		enc    bool
		mutate func(t *testing.T, p string)
		want   error
	}{
		{"missing", false, func(t *testing.T, p string) { os.Remove(p) }, chunkstore.ErrNotFound},
		{"crc", false, func(t *testing.T, p string) { fixture.FlipByte(t, p, -1) }, chunkstore.ErrCRC},
		{"crc-encrypted", true, func(t *testing.T, p string) { fixture.FlipByte(t, p, 50) }, chunkstore.ErrCRC},
		{"digest", false, func(t *testing.T, p string) { os.WriteFile(p, fixture.Encode(t, other, nil, true), 0o644) }, chunkstore.ErrDigestMismatch},
		{"digest-encrypted", true, func(t *testing.T, p string) { os.WriteFile(p, fixture.Encode(t, other, cc, false), 0o644) }, chunkstore.ErrDigestMismatch},
		{"shorter", false, func(t *testing.T, p string) { os.WriteFile(p, fixture.Encode(t, plain[:100], nil, false), 0o644) }, chunkstore.ErrLengthMismatch},
		{"longer", false, func(t *testing.T, p string) {
			os.WriteFile(p, fixture.Encode(t, append(append([]byte{}, plain...), plain...), nil, true), 0o644)
		}, chunkstore.ErrTooLarge},
		{"truncated", false, func(t *testing.T, p string) { os.Truncate(p, 11) }, chunkstore.ErrTruncated},
		{"empty", false, func(t *testing.T, p string) { os.Truncate(p, 0) }, chunkstore.ErrEmpty},
		{"unknown-magic", false, func(t *testing.T, p string) { fixture.Patch(t, p, 0, []byte("12345678")) }, chunkstore.ErrUnknownMagic},
		{"obsolete-magic", false, func(t *testing.T, p string) {
			fixture.Patch(t, p, 0, []byte{0x7e, 0xa6, 0x0f, 0xbe, 0x91, 0x1f, 0xa9, 0x60})
		}, chunkstore.ErrObsoleteMagic},
		{"plain-in-encrypted", true, func(t *testing.T, p string) { os.WriteFile(p, fixture.Encode(t, plain, nil, true), 0o644) }, chunkstore.ErrCryptModeMismatch},
		{"encrypted-in-plain", false, func(t *testing.T, p string) { os.WriteFile(p, fixture.Encode(t, plain, cc, true), 0o644) }, chunkstore.ErrCryptModeMismatch},
		{"other-key", true, func(t *testing.T, p string) {
			_, occ := fixture.Key(t, 7)
			os.WriteFile(p, fixture.Encode(t, plain, occ, true), 0o644)
		}, chunkstore.ErrDecrypt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var k *crypto.Config
			if c.enc {
				k = cc
			}
			dir := fixture.CopyDir(t, stores[c.enc], filepath.Join(t.TempDir(), "s"))
			store := fixture.OpenStore(t, dir)
			plan, _ := restoretest.LoadPlan(t, store, snaps[c.enc], k)
			_, ds := fixture.Digests(t, fixture.SnapPath(dir, snaps[c.enc], "drive-scsi0.img.fidx"))
			d := ds[victim]
			c.mutate(t, fixture.ChunkPath(dir, d))
			opts := restore.Options{Jobs: 2, Writers: 2, Encrypted: c.enc, Key: k, Archive: "vm/100/x/drive-scsi0.img.fidx"}

			tgt := newMemTarget(len(img))
			err := restore.Run(context.Background(), store, plan, tgt, opts, nil)
			var ce *restore.ChunkError
			if !errors.As(err, &ce) || !errors.Is(err, c.want) {
				t.Fatalf("got %v, want a ChunkError wrapping %v", err, c.want)
			}
			if ce.Digest != d || len(ce.Offsets) != 1 || ce.Offsets[0] != victim*cs || ce.Length != cs || ce.Location != fixture.ChunkPath(dir, d) {
				t.Errorf("chunk error: digest %s offsets %v length %d location %s", ce.Digest, ce.Offsets, ce.Length, ce.Location)
			}
			if tgt.writes[victim*cs] != 0 || tgt.synced {
				t.Error("the damaged chunk was written or the target synced")
			}

			// KeepGoing: a second damaged chunk is listed too, the rest is written.
			fixture.FlipByte(t, fixture.ChunkPath(dir, ds[5]), -1)
			opts.KeepGoing = true
			var st restore.Stats
			tgt = newMemTarget(len(img))
			err = restore.Run(context.Background(), store, plan, tgt, opts, &st)
			var de *restore.DamagedError
			if !errors.As(err, &de) || len(de.Chunks) != 2 || de.Archive != opts.Archive {
				t.Fatalf("KeepGoing: got %v, want a DamagedError with 2 chunks", err)
			}
			got := map[crypto.Digest]bool{}
			for _, ch := range de.Chunks {
				got[ch.Digest] = true
			}
			if !got[d] || !got[ds[5]] || st.Failed.Load() != 2 {
				t.Errorf("damaged chunks %v, failed %d", got, st.Failed.Load())
			}
			if int(st.Fetched.Load()) != len(plan.Chunks)-2 || tgt.synced {
				t.Errorf("fetched %d of %d (2 damaged), synced %v", st.Fetched.Load(), len(plan.Chunks), tgt.synced)
			}
		})
	}
}

// cancelingTarget cancels the run's context at its first write.
type cancelingTarget struct {
	*memTarget
	cancel context.CancelFunc
}

func (c cancelingTarget) WriteAt(p []byte, off int64) error {
	c.cancel()
	return c.memTarget.WriteAt(p, off)
}

// TestRunCanceled: a context canceled before or during the run stops it
// with context.Canceled and the target never synced; before the run, no
// chunk is fetched. An encrypted archive without a key is refused before
// anything is read.
func TestRunCanceled(t *testing.T) {
	img := fixture.Mixed(1<<20, 4)
	dir, snap := restoretest.SnapshotOf(t, img, nil)
	store := fixture.OpenStore(t, dir)
	plan, _ := restoretest.LoadPlan(t, store, snap, nil)
	if len(plan.Chunks) < 4 {
		t.Fatalf("plan has %d chunks, want several", len(plan.Chunks))
	}
	for _, during := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		mem := newMemTarget(len(img))
		var tgt restore.Target = mem
		if during {
			tgt = cancelingTarget{mem, cancel}
		} else {
			cancel()
		}
		var st restore.Stats
		err := restore.Run(ctx, store, plan, tgt, restore.Options{Jobs: 1, Fetchers: 1}, &st)
		cancel()
		if !errors.Is(err, context.Canceled) || mem.synced {
			t.Fatalf("canceled (during the run: %v): err %v, synced %v", during, err, mem.synced)
		}
		if !during && st.Fetched.Load() != 0 {
			t.Errorf("canceled before the run: %d chunks fetched", st.Fetched.Load())
		}
		if during && mem.writeCount() == len(plan.Chunks) {
			t.Errorf("canceled at the first write: every chunk written anyway")
		}
	}
	var st restore.Stats
	err := restore.Run(context.Background(), store, plan, newMemTarget(len(img)), restore.Options{Encrypted: true, Archive: "drive-scsi0.img.fidx"}, &st)
	if err == nil || !strings.Contains(err.Error(), "a key is needed") || !strings.Contains(err.Error(), "drive-scsi0.img.fidx") {
		t.Fatalf("encrypted without key: %v", err)
	}
	if st.Fetched.Load() != 0 {
		t.Errorf("encrypted without key: %d chunks fetched", st.Fetched.Load())
	}
}

// TestLoadPlanErrors: damaged or inconsistent indexes are refused with the
// right sentinel and the index path.
func TestLoadPlanErrors(t *testing.T) {
	_, cc := fixture.Key(t, 8)
	img := fixture.Mixed(512<<10+9, 5)
	dirs := map[bool]string{}
	var snap index.Snapshot
	for _, enc := range []bool{false, true} {
		var k *crypto.Config
		if enc {
			k = cc
		}
		dirs[enc], snap = restoretest.SnapshotOf(t, img, k)
	}
	le := func(v uint64) []byte {
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		return b
	}
	cases := []struct {
		name    string
		enc     bool
		archive string
		key     bool
		mutate  func(t *testing.T, dir, fidx string)
		want    error
	}{
		{name: "not-in-manifest", archive: "drive-scsi1.img.fidx", want: index.ErrNotInManifest},
		{name: "missing-key", enc: true, want: index.ErrMissingKey},
		{name: "missing-index", mutate: func(t *testing.T, dir, p string) { os.Remove(p) }, want: chunkstore.ErrNotFound},
		{name: "bad-magic", mutate: func(t *testing.T, dir, p string) { fixture.FlipByte(t, p, 3) }, want: index.ErrBadMagic},
		{name: "chunk-size-0", mutate: func(t *testing.T, dir, p string) { fixture.Patch(t, p, 0x48, le(0)) }, want: index.ErrBadChunkSize},
		{name: "chunk-size-odd", mutate: func(t *testing.T, dir, p string) { fixture.Patch(t, p, 0x48, le(65537)) }, want: index.ErrBadChunkSize},
		{name: "chunk-size-2x", mutate: func(t *testing.T, dir, p string) { fixture.Patch(t, p, 0x48, le(2*cs)) }, want: index.ErrBadLength},
		{name: "size-0", mutate: func(t *testing.T, dir, p string) { fixture.Patch(t, p, 0x40, le(0)) }, want: index.ErrBadIndex},
		{name: "header-size-bigger", mutate: func(t *testing.T, dir, p string) { fixture.Patch(t, p, 0x40, le(uint64(len(img))+cs)) }, want: index.ErrBadLength},
		{name: "header-size-smaller-same-count", mutate: func(t *testing.T, dir, p string) { fixture.Patch(t, p, 0x40, le(uint64(len(img))-1)) }, want: index.ErrSizeMismatch},
		// A header and file length that agree, with a size the manifest does
		// not give: refused before the (sparse, huge) entries are read.
		{name: "header-size-1TiB-consistent-length", mutate: func(t *testing.T, dir, p string) {
			fixture.Patch(t, p, 0x40, le(1<<40))
			os.Truncate(p, index.HeaderSize+32*(1<<40)/int64(cs))
		}, want: index.ErrSizeMismatch},
		{name: "long", mutate: func(t *testing.T, dir, p string) {
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0})
			f.Close()
		}, want: index.ErrBadLength},
		{name: "short", mutate: func(t *testing.T, dir, p string) { st, _ := os.Stat(p); os.Truncate(p, st.Size()-1) }, want: index.ErrBadLength},
		{name: "empty", mutate: func(t *testing.T, dir, p string) { os.Truncate(p, 0) }, want: index.ErrBadLength},
		{name: "digest-patched", mutate: func(t *testing.T, dir, p string) { fixture.FlipByte(t, p, 4096+40) }, want: index.ErrCsumMismatch},
		{name: "digest-patched-encrypted", enc: true, key: true, mutate: func(t *testing.T, dir, p string) { fixture.FlipByte(t, p, -1) }, want: index.ErrCsumMismatch},
		{name: "header-csum-ignored", mutate: func(t *testing.T, dir, p string) { fixture.FlipByte(t, p, 0x20) }},
		{name: "manifest-size", mutate: func(t *testing.T, dir, p string) {
			fixture.RewriteManifest(t, dir, snap, func(m *index.Manifest) { m.Files[0].Size++ })
		}, want: index.ErrSizeMismatch},
		{name: "manifest-csum", mutate: func(t *testing.T, dir, p string) {
			fixture.RewriteManifest(t, dir, snap, func(m *index.Manifest) { m.Files[0].Csum[0] ^= 1 })
		}, want: index.ErrCsumMismatch},
		{name: "blob-is-not-an-index", archive: "index.json.blob", mutate: func(t *testing.T, dir, p string) {
			fixture.RewriteManifest(t, dir, snap, func(m *index.Manifest) {
				m.Files = append(m.Files, index.FileInfo{Filename: "index.json.blob", CryptMode: index.CryptNone})
			})
		}, want: restore.ErrNotChunkIndex},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.CopyDir(t, dirs[c.enc], filepath.Join(t.TempDir(), "s"))
			fidx := fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx")
			if c.mutate != nil {
				c.mutate(t, dir, fidx)
			}
			var k *crypto.Config
			if c.key {
				k = cc
			}
			store := fixture.OpenStore(t, dir)
			m := fixture.Manifest(t, dir, snap) // unchecked: LoadPlan does its own key check
			archive := c.archive
			if archive == "" {
				archive = "drive-scsi0.img.fidx"
			}
			plan, _, err := restore.LoadPlan(context.Background(), store, snap.Dir(), m, archive, k)
			if c.want == nil {
				if err != nil || plan.Size != uint64(len(img)) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if plan != nil {
				t.Error("a plan was returned with the error")
			}
			if c.mutate != nil && !strings.Contains(err.Error(), "drive-scsi0.img.fidx") && !strings.Contains(err.Error(), "index.json.blob") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

// TestReadBackWithoutFile: a target without a file is read back through
// its ReadBacker capability: a clean target passes, a changed data byte
// and a non-zero byte in a zero range are named; a target without the
// capability says it cannot be read back; CheckDurable finds only the
// chunks the target's bytes hold.
func TestReadBackWithoutFile(t *testing.T) {
	data := dedupImage()
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	s := fixture.OpenStore(t, dir)
	plan, _ := restoretest.LoadPlan(t, s, snap, nil)
	m := newMemTarget(len(data))
	if err := restore.Run(context.Background(), s, plan, m, restore.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	var st restore.ReadBackStats
	if err := restore.ReadBackTarget(context.Background(), m, "mem", plan, nil, 2, &st); err != nil {
		t.Fatalf("clean target: %v", err)
	}
	if st.Chunks.Load() == 0 || st.ZeroChecked.Load() == 0 {
		t.Fatalf("read back %d chunks, %d zero bytes: want both", st.Chunks.Load(), st.ZeroChecked.Load())
	}
	durable := map[crypto.Digest]bool{}
	for _, c := range plan.Chunks {
		durable[c.Digest] = true
	}
	z := plan.Zero[0]
	m.buf[len(m.buf)-1] ^= 1
	m.buf[z.Offset+z.Length/2] = 0x55
	err := restore.ReadBackTarget(context.Background(), m, "mem", plan, nil, 2, nil)
	if !errors.Is(err, restore.ErrReadBackMismatch) || !strings.Contains(err.Error(), "should read as zeros") || !strings.Contains(err.Error(), "1 chunk(s) differ") {
		t.Errorf("want a mismatch naming the zero range and the chunk, got %v", err)
	}
	held, err := restore.CheckDurable(context.Background(), m, plan, durable, nil, 2, nil)
	if err != nil || len(held) != len(plan.Chunks)-1 {
		t.Errorf("CheckDurable found %d of %d chunks (%v), want all but the changed one", len(held), len(plan.Chunks), err)
	}
	err = restore.ReadBackTarget(context.Background(), restore.Discard{}, "discard", plan, nil, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be read back") {
		t.Errorf("a target without ReadBacker: %v", err)
	}
}
