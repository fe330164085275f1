package restore

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// DryRunOptions tune DryRun.
type DryRunOptions struct {
	// Delta plans a differential restore (as RestoreOptions.Delta) into
	// Sink: a trusted base is checked against the target's record (a
	// refusal is returned as the restore would return it), a verified
	// base or an in-place restore reads the target back (ReadBackOpener;
	// a missing target holds nothing). Nil: a full restore (or verify).
	Delta *Delta
	Sink  Sink
	// Stat asks the store for the stored (encoded) size of each chunk to
	// fetch where that costs no request (a directory: a stat each); with
	// CheckPresent a bucket is asked too (a HEAD each, counted). A chunk
	// the store says is not there is counted missing.
	Stat, CheckPresent bool
	// Bucket says that the store is a bucket (its checks are requests).
	Bucket bool
	// Jobs is how many checks run at once; 0: 16.
	Jobs int
	// Seen, when set, holds the chunks planned already (by the dry runs
	// of other archives of one verify): they are left out (counted as
	// Shared), and this archive's are added.
	Seen map[crypto.Digest]bool
	// ZeroChunk says that the run reads the zero chunk too, once, where
	// the image has zero chunks (verify checks it for other clients).
	ZeroChunk bool
}

// DryRunResult is the plan of a restore (or verify) without its work:
// nothing is fetched but the index. Bytes are image bytes unless said.
type DryRunResult struct {
	Snapshot  string  `json:"snapshot"`
	Archive   string  `json:"archive"`
	Size      uint64  `json:"size"`
	Positions uint64  `json:"positions"`  // index positions
	ZeroBytes uint64  `json:"zero-bytes"` // bytes of zero chunks: never fetched
	ZeroShare float64 `json:"zero-share"` // ZeroBytes / Size
	// Chunks counts the unique chunks to fetch, ChunkBytes their
	// plaintext bytes, WriteBytes the data bytes written (every position
	// they fill).
	Chunks     int    `json:"chunks"`
	ChunkBytes uint64 `json:"chunk-bytes"`
	WriteBytes uint64 `json:"write-bytes"`
	// EncodedBytes are the stored bytes of the chunks to fetch, known as
	// EncodedSizes says: "stat" (a directory's chunk files), "head" (a
	// bucket's HEAD requests), or "estimated" (their plaintext length:
	// the store was not asked).
	EncodedBytes uint64 `json:"encoded-bytes"`
	EncodedSizes string `json:"encoded-sizes"`
	// GetRequests is one GET (or file read) per chunk to fetch;
	// HeadRequests the bucket existence checks this dry run made.
	GetRequests  int `json:"get-requests"`
	HeadRequests int `json:"head-requests"`
	// Checked counts the chunks whose presence was checked, Missing those
	// the store said are not there (MissingChunks: the first 16).
	Checked       int      `json:"checked"`
	Missing       int      `json:"missing"`
	MissingChunks []string `json:"missing-chunks,omitempty"`
	// SkippedPositions are the positions a differential restore leaves
	// out (Delta says more).
	SkippedPositions uint64       `json:"skipped-positions"`
	Delta            *DeltaResult `json:"delta,omitempty"`
	// Shared counts the unique chunks left out because another archive
	// of the same run fetches them (DryRunOptions.Seen).
	Shared int `json:"shared-chunks,omitempty"`
}

// DryRun plans archive name of src as Restore would (a differential
// restore with o.Delta) and returns what the run would fetch and write,
// fetching no chunk. Refusals wrap ErrRefused; other errors are the
// index's, the store's checks' (other than a chunk missing) and the
// target's read-back.
func DryRun(ctx context.Context, src *snapshot.Reader, name string, o DryRunOptions) (*DryRunResult, error) {
	plan, fi, err := PlanOf(ctx, src, name)
	if err != nil {
		return nil, err
	}
	res := &DryRunResult{Snapshot: src.Snapshot().String(), Archive: name, Size: plan.Size, Positions: plan.Positions, ZeroBytes: plan.ZeroBytes}
	if plan.Size > 0 {
		res.ZeroShare = float64(plan.ZeroBytes) / float64(plan.Size)
	}
	work := plan
	if o.Delta != nil {
		d := &disk{name: name, sink: o.Sink, plan: plan, encrypted: fi.CryptMode == index.CryptEncrypt}
		d.res = &Result{Key: src.KeyFor(fi)}
		if err := d.prepareDelta(ctx, o.Delta); err != nil {
			return nil, err
		}
		var cc *crypto.Config
		if d.encrypted {
			cc = d.res.Key
		}
		in := deltaInput{plan: plan, base: d.delta.base, cc: cc, readers: o.Delta.Readers, res: d.delta.res, held: d.delta.held, heldKnown: d.delta.heldKnown}
		if o.Delta.VerifyBase || o.Delta.InPlace {
			var r BackReader = zeroReader{}
			if ro, ok := o.Sink.(ReadBackOpener); ok {
				tr, err := ro.OpenReadBack()
				switch {
				case err == nil:
					defer tr.Close()
					r = tr
				case !errors.Is(err, os.ErrNotExist):
					return nil, err
				}
			}
			in.r = r
		}
		if work, err = planDelta(ctx, in); err != nil {
			return nil, err
		}
		res.Delta, res.SkippedPositions = d.delta.res, d.delta.res.Skipped
	}
	res.WriteBytes = work.writeBytes()
	chunks := work.Chunks
	if o.ZeroChunk && len(plan.Zero) > 0 && plan.ChunkSize > 0 {
		chunks = append(slices.Clone(chunks), Chunk{Digest: plan.ZeroDigest, Length: int(plan.ChunkSize)})
	}
	if o.Seen != nil {
		kept := chunks[:0:0]
		for _, c := range chunks {
			if o.Seen[c.Digest] {
				res.Shared++
				continue
			}
			o.Seen[c.Digest] = true
			kept = append(kept, c)
		}
		chunks = kept
	}
	res.Chunks, res.GetRequests = len(chunks), len(chunks)
	for i := range chunks {
		res.ChunkBytes += uint64(chunks[i].Length)
	}
	res.EncodedBytes, res.EncodedSizes = res.ChunkBytes, "estimated"
	st, ok := src.Store().(chunkstore.ChunkStatter)
	if !ok || !(o.CheckPresent || (o.Stat && !o.Bucket)) {
		return res, nil
	}
	if err := statChunks(ctx, st, chunks, o, res); err != nil {
		return nil, err
	}
	return res, nil
}

// statChunks asks st for the stored size of every chunk of chunks (o.Jobs at
// once), filling res's encoded bytes, checks and missing chunks.
func statChunks(ctx context.Context, st chunkstore.ChunkStatter, chunks []Chunk, o DryRunOptions, res *DryRunResult) error {
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = 16
	}
	var (
		encoded atomic.Uint64
		mu      sync.Mutex
		first   error
		missing []crypto.Digest
		wg      sync.WaitGroup
		next    atomic.Int64
	)
	for range jobs {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(chunks) || ctx.Err() != nil {
					return
				}
				c := &chunks[i]
				size, err := st.StatChunk(ctx, c.Digest)
				mu.Lock()
				switch {
				case err == nil:
					encoded.Add(uint64(size))
				case errors.Is(err, chunkstore.ErrNotFound):
					missing = append(missing, c.Digest)
				case first == nil:
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	res.Checked, res.Missing = len(chunks), len(missing)
	for _, d := range missing[:min(len(missing), 16)] {
		res.MissingChunks = append(res.MissingChunks, d.String())
	}
	res.EncodedBytes, res.EncodedSizes = encoded.Load(), "stat"
	if o.Bucket {
		res.EncodedSizes, res.HeadRequests = "head", len(chunks)
	}
	return nil
}

// zeroReader is the read-back of a target that is not there: it reads as
// zeros and holds no data.
type zeroReader struct{}

// ReadAt fills p with zeros.
func (zeroReader) ReadAt(p []byte, off int64) (int, error) { clear(p); return len(p), nil }

// Data reports no data.
func (zeroReader) Data(off, length uint64) [][2]uint64 { return nil }

// Close does nothing.
func (zeroReader) Close() error { return nil }
