package restore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"unsafe"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
)

// payloadStore records, for every uncompressed chunk it reads, the address
// of the blob's payload in the buffer it was read into.
type payloadStore struct {
	chunkstore.Store
	mu      sync.Mutex
	payload map[crypto.Digest]uintptr
}

func (s *payloadStore) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	raw, err := s.Store.ReadChunk(ctx, d, buf, limit)
	if err == nil {
		if k, kerr := chunkstore.Kind(raw); kerr == nil && !k.Compressed() && len(raw) > k.HeaderSize() {
			s.mu.Lock()
			s.payload[d] = uintptr(unsafe.Pointer(&raw[k.HeaderSize()]))
			s.mu.Unlock()
		}
	}
	return raw, err
}

// salvageStore is a payloadStore that also reads the copies its store
// keeps aside as damaged.
type salvageStore struct {
	*payloadStore
	chunkstore.BadCopies
}

// addrTarget is a memTarget that checks that every write's memory is
// Alignment-aligned (the Target contract, O_DIRECT) and records the
// address each offset was written from.
type addrTarget struct {
	*memTarget
	mu        sync.Mutex
	from      map[int64]uintptr
	unaligned int
}

func (a *addrTarget) WriteAt(p []byte, off int64) error {
	addr := uintptr(unsafe.Pointer(&p[0]))
	a.mu.Lock()
	a.from[off] = addr
	if addr%restore.Alignment != 0 {
		a.unaligned++
	}
	a.mu.Unlock()
	return a.memTarget.WriteAt(p, off)
}

// TestRunUncompressedZeroCopy: an uncompressed chunk (incompressible data),
// plain or encrypted, is decoded where it was read and written from there,
// not copied into a buffer of its own; every write's memory is aligned,
// the image is restored byte for byte (compressed chunks beside them, a
// short last chunk, repeated chunks), with and without writers and with
// few buffers, so that buffers change hands many times.
func TestRunUncompressedZeroCopy(t *testing.T) {
	var regions []fixture.Region
	for i := range 12 {
		kind := fixture.Random
		if i%3 == 2 {
			kind = fixture.Text
		}
		regions = append(regions, fixture.Region{Kind: kind, Len: cs})
	}
	regions = append(regions, fixture.Region{Kind: fixture.Random, Len: 5000})
	base := fixture.Build(11, regions...)
	img := append(append([]byte(nil), base...), base[:2*cs]...) // two repeated chunks
	img = append(img, fixture.Build(12, fixture.Region{Kind: fixture.Random, Len: 5000})...)
	for _, c := range []struct {
		encrypted bool
		jobs      int
		writers   int
		fetchers  int
		salvage   bool // damage two uncompressed chunks, keep intact copies as .bad copies
	}{{false, 1, 0, 1, false}, {false, 2, 3, 3, false}, {true, 1, 0, 1, false}, {true, 2, 3, 3, false}, {true, 1, 1, 2, false},
		{false, 2, 3, 3, true}, {true, 1, 0, 1, true}} {
		name := fmt.Sprintf("%s-jobs-%d-writers-%d", map[bool]string{false: "plain", true: "encrypted"}[c.encrypted], c.jobs, c.writers)
		if c.salvage {
			name += "-salvage"
		}
		t.Run(name, func(t *testing.T) {
			var cc *crypto.Config
			if c.encrypted {
				_, cc = fixture.Key(t, 5)
			}
			dir, snap := restoretest.SnapshotOf(t, img, cc)
			local := fixture.OpenStore(t, dir)
			ps := &payloadStore{Store: local, payload: map[crypto.Digest]uintptr{}}
			var store chunkstore.Store = ps
			if c.salvage {
				store = salvageStore{ps, local}
			}
			plan, fi := restoretest.LoadPlan(t, store, snap, cc)
			salvaged := map[crypto.Digest]bool{}
			if c.salvage {
				// A copy kept aside is read into the start of the buffer,
				// not where the payload comes out aligned: such a chunk
				// is copied into an aligned buffer, and still restored.
				for i := 0; len(salvaged) < 2; i++ {
					d := plan.Chunks[i].Digest
					p := fixture.ChunkPath(dir, d)
					good, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					if k, _ := chunkstore.Kind(good); k.Compressed() {
						continue
					}
					bad := append([]byte(nil), good...)
					bad[len(bad)/2] ^= 1
					if err := os.WriteFile(p+".0.bad", good, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, bad, 0o644); err != nil {
						t.Fatal(err)
					}
					salvaged[d] = true
				}
			}
			tgt := &addrTarget{memTarget: newMemTarget(len(img)), from: map[int64]uintptr{}}
			err := restore.Run(context.Background(), store, plan, tgt, restore.Options{Jobs: c.jobs, Writers: c.writers, Fetchers: c.fetchers,
				Encrypted: fi.CryptMode == index.CryptEncrypt, Key: cc, Archive: "x"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			fixture.EqualBytes(t, "restored", tgt.bytes(), img)
			if tgt.unaligned > 0 {
				t.Errorf("%d writes from unaligned memory", tgt.unaligned)
			}
			// A repeated chunk is written to all its offsets from one
			// buffer, after which the buffer is read into again: only the
			// address of its last read is known, so check one offset per
			// chunk read once.
			uncompressed, zeroCopy := 0, 0
			for i := range plan.Chunks {
				ch := &plan.Chunks[i]
				at, ok := ps.payload[ch.Digest]
				if !ok || salvaged[ch.Digest] {
					continue
				}
				uncompressed++
				for _, off := range plan.Offsets(ch) {
					if tgt.from[int64(off)] == at {
						zeroCopy++
						break
					}
				}
			}
			if uncompressed < 9-len(salvaged) || zeroCopy != uncompressed {
				t.Errorf("%d of %d uncompressed chunks written from where they were read, want all (≥ 9)", zeroCopy, uncompressed)
			}
		})
	}
}

// TestFirstTouch: FirstTouch maps and touches exactly the buffers Run
// maps for the same settings: max(fetchers, 2 × jobs) + 2 for encoded
// chunks and jobs + 2 × writers for decoded ones, each the chunk, its
// header before the first Alignment boundary and the GCM tag, rounded up
// to whole pages.
func TestFirstTouch(t *testing.T) {
	for _, c := range []struct {
		opts restore.Options
		want int64
	}{
		{restore.Options{Jobs: 1, Writers: 1, Fetchers: 1}, (4 + 3) * (restore.Alignment + cs + restore.Alignment)},
		{restore.Options{Jobs: 2, Writers: 4, Fetchers: 32, Encrypted: true}, (34 + 10) * (restore.Alignment + cs + restore.Alignment)},
		{restore.Options{Jobs: 2, Writers: 0}, (6 + 2) * (restore.Alignment + cs + restore.Alignment)},
	} {
		n, err := restore.FirstTouch(c.opts, cs)
		if err != nil || n != c.want {
			t.Errorf("FirstTouch(%+v) = %d, %v; want %d bytes", c.opts, n, err, c.want)
		}
	}
}
