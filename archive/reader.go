package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// DefaultCacheSize is the default bound on decoded chunks kept in memory:
// 256 MiB.
const DefaultCacheSize = 256 << 20

// Options tune a Reader. Zero values pick defaults.
type Options struct {
	// CacheSize bounds the memory for chunks, in bytes: decoded chunks
	// kept plus one encoded-chunk buffer per fetcher; default
	// DefaultCacheSize. At least two decoded chunks are kept.
	CacheSize int64
	// Fetchers is the number of chunk reads in flight at most, read-ahead
	// and demand reads together, and how far ahead a sequential reader is
	// served (capped at half the cache); default the number of cores. Pass
	// the restore's fetch concurrency for the store. Fewer run when their
	// encoded-chunk buffers would take more than half of CacheSize (large
	// chunks: 256 MiB holds 16 chunks of 16 MiB, so 8 fetchers).
	Fetchers int
	// Log, if set, is called once for each chunk that fails a read (the
	// first read of its bytes that fails), with a *restore.ChunkError
	// naming digest, range and cause. Read-ahead failures are not logged.
	Log func(error)
	// Salvaged, if set, is called once for each chunk missing or damaged
	// in every store that was recovered from a copy kept aside as damaged
	// (chunkstore.Salvage), with the copy's file path or object URL.
	Salvaged func(d crypto.Digest, copy string)
}

// Stats counts a Reader's work; read the fields with their Load methods.
// Only chunks that passed their check count as fetched: a failed attempt
// adds nothing to Fetched or FetchedBytes.
type Stats struct {
	Fetched      atomic.Uint64 // chunks read from the store and verified
	FetchedBytes atomic.Uint64 // encoded bytes of the Fetched chunks
	ReadAhead    atomic.Uint64 // of Fetched: chunks read ahead of a sequential reader
	FailedReads  atomic.Uint64 // ReadAt calls that failed on a missing or damaged chunk
	FailedChunks atomic.Uint64 // distinct chunks such reads failed on (each logged once)
	Salvaged     atomic.Uint64 // of Fetched: chunks recovered from a .bad copy (chunkstore.Salvage)
}

// Extent is a byte range of the archive, [Offset, Offset+Length), that is
// either all zero chunks (Zero: served without any fetch) or data.
type Extent struct {
	Offset, Length int64
	Zero           bool
}

// chunk is one unique non-zero chunk: digest and plaintext length in bytes.
type chunk struct {
	digest crypto.Digest
	length int
}

// Reader reads one archive at any offset. It is safe for concurrent use.
type Reader struct {
	store     chunkstore.Store
	name      string // snapshot dir + archive, for errors
	size      int64
	chunkSize int64   // fixed index: nominal chunk size; 0 for a dynamic index
	starts    []int64 // dynamic index: start offset of each position
	refs      []int32 // per position: index into chunks, or -1 for a zero chunk
	chunks    []chunk // unique non-zero chunks
	encrypted bool    // the manifest's crypt mode
	key       *crypto.Config
	cache     *cache
	workers   chan *worker // the fetch pool: its size bounds reads in flight
	ahead     int          // positions read ahead of a sequential reader
	aheadBusy atomic.Int32 // read-ahead loads in flight
	streams   streams
	log       func(error)
	logged    sync.Map // crypto.Digest → struct{}: chunks whose failure was logged
	salvaged  func(crypto.Digest, string)
	told      sync.Map // crypto.Digest → struct{}: chunks whose salvage was told
	ctx       context.Context
	cancel    context.CancelFunc
	bg        sync.WaitGroup // read-ahead goroutines
	stats     Stats
}

// worker is a fetch slot: a decoder and its encoded-chunk buffer.
type worker struct {
	dec *chunkstore.Decoder
	raw []byte
}

// Open opens archive name (…​.fidx or …​.didx) of the snapshot in directory
// snapDir, whose manifest m was loaded and checked, for random access. cc
// is the key of an encrypted archive (nil otherwise); an encrypted archive
// without it is refused with an error wrapping index.ErrMissingKey. Errors
// from reading and checking the index are returned as restore.LoadPlan
// returns them. Close the Reader when done; ctx bounds every chunk read.
func Open(ctx context.Context, store chunkstore.Store, snapDir string, m *index.Manifest, name string, cc *crypto.Config, opts Options) (*Reader, error) {
	return open(ctx, store, store, snapDir, m, name, cc, opts)
}

// OpenSnapshot opens archive name of the snapshot src for random access
// (see Open): its index is read as src reads the snapshot's files (from
// the store member that holds the manifest), its chunks from src's store,
// with src's key.
func OpenSnapshot(ctx context.Context, src *snapshot.Reader, name string, opts Options) (*Reader, error) {
	return open(ctx, src.Store(), src, src.Snapshot().Dir(), src.Manifest(), name, src.Key(), opts)
}

// open is Open with the snapshot's files opened through files.
func open(ctx context.Context, store chunkstore.Store, files chunkstore.FileOpener, snapDir string, m *index.Manifest, name string, cc *crypto.Config, opts Options) (*Reader, error) {
	plan, fi, err := restore.LoadPlan(ctx, files, snapDir, m, name, cc)
	if err != nil {
		return nil, err
	}
	r := &Reader{
		store:     store,
		name:      path.Join(snapDir, name),
		size:      int64(plan.Size),
		chunkSize: int64(plan.ChunkSize),
		encrypted: fi.CryptMode == index.CryptEncrypt,
		log:       opts.Log,
		salvaged:  opts.Salvaged,
	}
	if r.encrypted {
		r.key = cc
	}
	maxLen := 0
	r.chunks = make([]chunk, len(plan.Chunks))
	for i := range plan.Chunks {
		c := &plan.Chunks[i]
		r.chunks[i] = chunk{digest: c.Digest, length: c.Length}
		maxLen = max(maxLen, c.Length)
	}
	if r.chunkSize > 0 {
		// Fixed index: position = offset / chunk size.
		r.refs = make([]int32, plan.Positions)
		for i := range r.refs {
			r.refs[i] = -1
		}
		for i := range plan.Chunks {
			for _, off := range plan.Offsets(&plan.Chunks[i]) {
				r.refs[int64(off)/r.chunkSize] = int32(i)
			}
		}
	} else {
		type pos struct {
			start int64
			ref   int32
		}
		all := make([]pos, 0, plan.Positions)
		for i := range plan.Chunks {
			for _, off := range plan.Offsets(&plan.Chunks[i]) {
				all = append(all, pos{int64(off), int32(i)})
			}
		}
		sort.Slice(all, func(a, b int) bool { return all[a].start < all[b].start })
		r.starts = make([]int64, len(all))
		r.refs = make([]int32, len(all))
		for i, p := range all {
			r.starts[i], r.refs[i] = p.start, p.ref
		}
	}
	fetchers := opts.Fetchers
	if fetchers <= 0 {
		fetchers = runtime.GOMAXPROCS(0)
	}
	cacheSize := opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	// The cache and the fetchers' encoded-chunk buffers share CacheSize.
	slot := max(maxLen, 1)
	fetchers, slots := budget(cacheSize, slot, fetchers)
	r.cache = newCache(slot, slots)
	r.ahead = min(fetchers, slots/2)
	r.workers = make(chan *worker, fetchers)
	for range fetchers {
		dec, err := chunkstore.NewDecoderLimit(max(maxLen, 8<<20))
		if err != nil {
			r.closeWorkers()
			return nil, err
		}
		r.workers <- &worker{dec: dec}
	}
	r.streams.reset()
	r.ctx, r.cancel = context.WithCancel(ctx)
	return r, nil
}

// budget splits cacheSize bytes between the fetchers' encoded-chunk
// buffers and the cache's decoded chunks, every buffer slot bytes (the
// largest chunk), and returns how many fetchers to run and how many chunks
// the cache keeps. The fetchers take at most half the buffers: every chunk
// read in flight needs a cache buffer as well, so fetchers beyond that
// would only wait, and a cache squeezed to a few chunks by them evicts
// chunks read ahead before they are read, fetching them again. At least
// one fetcher and two cached chunks, whatever the budget.
func budget(cacheSize int64, slot, fetchers int) (workers, slots int) {
	total := int(min(cacheSize/int64(slot), 1<<30))
	workers = max(min(fetchers, total/2), 1)
	return workers, max(total-workers, 2)
}

// Size returns the archive's size in bytes.
func (r *Reader) Size() int64 { return r.size }

// Name returns the archive's path in the store, "<snapshot dir>/<archive>".
func (r *Reader) Name() string { return r.name }

// ChunkSize returns the fixed index's chunk size in bytes, or 0 for a
// dynamic index.
func (r *Reader) ChunkSize() int64 { return r.chunkSize }

// Stats returns the Reader's counters.
func (r *Reader) Stats() *Stats { return &r.stats }

// Close stops read-ahead, waits for it and releases the decoders. Reads
// after Close fail.
func (r *Reader) Close() error {
	r.cancel()
	r.bg.Wait()
	r.closeWorkers()
	return nil
}

func (r *Reader) closeWorkers() {
	for {
		select {
		case w := <-r.workers:
			w.dec.Close()
		default:
			return
		}
	}
}

// position returns the index position holding byte off (0 ≤ off < size).
func (r *Reader) position(off int64) int {
	if r.chunkSize > 0 {
		return int(off / r.chunkSize)
	}
	return sort.Search(len(r.starts), func(i int) bool { return r.starts[i] > off }) - 1
}

// span returns the byte range [start, start+length) of position pos.
func (r *Reader) span(pos int) (start, length int64) {
	if r.chunkSize > 0 {
		start = int64(pos) * r.chunkSize
		return start, min(r.chunkSize, r.size-start)
	}
	start = r.starts[pos]
	if pos+1 < len(r.starts) {
		return start, r.starts[pos+1] - start
	}
	return start, r.size - start
}

// ErrClosed is returned by reads of a closed Reader.
var ErrClosed = errors.New("archive reader closed")

// ReadAt reads len(p) bytes at byte offset off, as io.ReaderAt: fewer only
// at the end of the archive (with io.EOF) or on an error. A chunk that
// cannot be read or fails its check returns an error wrapping a
// *restore.ChunkError (digest, its byte range, location, cause) after the
// bytes before it. When Options.Log is set, that error also has a method
// Logged() bool that returns true: the Reader has logged the chunk (at
// this read or an earlier one), and a server in front of it (fusefs, nbd)
// need not log it again.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", r.name, off)
	}
	if off >= r.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if r.ctx.Err() != nil {
		return 0, ErrClosed
	}
	end := min(off+int64(len(p)), r.size)
	if end > off {
		last := r.position(end - 1)
		if r.streams.advance(off, end, last) {
			r.readAhead(last + 1)
		}
	}
	n := 0
	for at := off; at < end; {
		pos := r.position(at)
		start, length := r.span(pos)
		k := min(end, start+length) - at
		if ci := r.refs[pos]; ci < 0 {
			clear(p[n : n+int(k)])
		} else {
			e, err := r.cache.get(r.chunks[ci].digest, func(buf []byte) ([]byte, error) { return r.fetch(r.ctx, ci, buf) })
			if err != nil {
				return n, r.failed(ci, start, err)
			}
			copy(p[n:n+int(k)], e.data[at-start:])
			r.cache.release(e)
		}
		n += int(k)
		at += k
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fetch reads chunk ci from the store into a worker's buffer and decodes
// and checks it into buf, the store's reads bound by ctx (r.ctx, or r.ctx
// marked as background work for read-ahead). It returns the store's or the
// check's error, or ErrClosed.
func (r *Reader) fetch(ctx context.Context, ci int32, buf []byte) ([]byte, error) {
	c := r.chunks[ci]
	var w *worker
	select {
	case w = <-r.workers:
	case <-r.ctx.Done():
		return nil, ErrClosed
	}
	defer func() { r.workers <- w }()
	if w.raw == nil {
		// Made once, for the largest chunk encrypted: no regrowth.
		w.raw = make([]byte, 0, r.cache.slot+chunkstore.EncryptedHeaderSize+crypto.TagSize)
	}
	raw, err := r.store.ReadChunk(ctx, c.digest, w.raw[:0], chunkstore.ChunkLimit(c.length))
	if err == nil {
		var data []byte
		// Decrypted in place in the worker's buffer, read again for every
		// chunk; an uncompressed chunk is then copied into buf once.
		data, err = w.dec.DecodeChunkInPlace(buf, raw, c.digest, c.length, r.encrypted, r.key)
		if err == nil {
			if len(data) > 0 && &data[0] != &buf[:1][0] {
				data = append(buf[:0], data...)
			}
			r.stats.Fetched.Add(1)
			r.stats.FetchedBytes.Add(uint64(len(raw)))
			return data, nil
		}
	}
	if chunkstore.Proven(err) && r.ctx.Err() == nil {
		// Missing or damaged: a copy kept aside that passes the check.
		var data []byte
		raw, copy, serr := chunkstore.Salvage(ctx, r.store, c.digest, err, w.raw[:0], chunkstore.ChunkLimit(c.length), func(raw []byte) error {
			var derr error
			data, derr = w.dec.DecodeChunk(buf, raw, c.digest, c.length, r.encrypted, r.key)
			return derr
		})
		if serr == nil {
			r.stats.Fetched.Add(1)
			r.stats.FetchedBytes.Add(uint64(len(raw)))
			r.stats.Salvaged.Add(1)
			if _, seen := r.told.LoadOrStore(c.digest, struct{}{}); !seen && r.salvaged != nil {
				r.salvaged(c.digest, copy)
			}
			return data, nil
		}
		err = serr
	}
	if r.ctx.Err() != nil {
		return nil, ErrClosed
	}
	return nil, err
}

// failed returns the error of a read that failed on chunk ci at the
// position starting at byte start, with cause err (from fetch, at this
// read or at the read-ahead it waited for). It counts the read, and logs
// the chunk the first time a read fails on it.
func (r *Reader) failed(ci int32, start int64, err error) error {
	if errors.Is(err, ErrClosed) {
		return err
	}
	c := r.chunks[ci]
	ce := &restore.ChunkError{Digest: c.digest, Length: c.length, Offsets: []uint64{uint64(start)}, Location: r.store.ChunkLocation(c.digest), Err: err}
	r.stats.FailedReads.Add(1)
	if _, seen := r.logged.LoadOrStore(c.digest, struct{}{}); !seen {
		r.stats.FailedChunks.Add(1)
		if r.log != nil {
			r.log(fmt.Errorf("%s: %w", r.name, ce))
		}
	}
	if r.log != nil {
		return loggedError{ce}
	}
	return ce
}

// loggedError is a read's chunk error that the Reader has passed to
// Options.Log; Logged tells servers in front of the Reader so.
type loggedError struct{ *restore.ChunkError }

// Logged reports that the Reader logged the error: true.
func (loggedError) Logged() bool { return true }

// Unwrap returns the *restore.ChunkError, for errors.As and errors.Is.
func (e loggedError) Unwrap() error { return e.ChunkError }

// readAhead starts loading the non-zero chunks of the r.ahead positions
// from pos on that are not cached, while fewer than r.ahead read-ahead
// loads are in flight.
func (r *Reader) readAhead(pos int) {
	for p := pos; p < min(pos+r.ahead, len(r.refs)); p++ {
		ci := r.refs[p]
		if ci < 0 || r.cache.has(r.chunks[ci].digest) {
			continue
		}
		if int(r.aheadBusy.Add(1)) > r.ahead {
			r.aheadBusy.Add(-1)
			return
		}
		bctx, promote := ratelimit.Background(r.ctx) // marked in order of position
		r.bg.Go(func() {
			defer r.aheadBusy.Add(-1)
			if r.ctx.Err() != nil {
				return
			}
			d := r.chunks[ci].digest
			// A failure here is not logged or counted: no reader asked for
			// these bytes yet. The entry is not kept, so the first read
			// that does fetches the chunk again, fails and logs it. Under
			// a rate limit, demanded reads take the rate first, and
			// read-ahead goes in order of position, the load a reader
			// waits for promoted to a demanded read.
			r.cache.prefetch(d, func(buf []byte) ([]byte, error) {
				data, err := r.fetch(bctx, ci, buf)
				if err == nil {
					r.stats.ReadAhead.Add(1)
				}
				return data, err
			}, promote)
		})
	}
}

// Extents returns the extents covering [off, off+length) clipped to the
// archive, in order, neighbours of the same kind merged. Only a fixed
// index has zero extents; a dynamic index is all data.
func (r *Reader) Extents(off, length int64) []Extent {
	end := min(off+length, r.size)
	if off < 0 || off >= end {
		return nil
	}
	var out []Extent
	for at := off; at < end; {
		pos := r.position(at)
		start, l := r.span(pos)
		k := min(end, start+l) - at
		zero := r.refs[pos] < 0
		if n := len(out); n > 0 && out[n-1].Zero == zero {
			out[n-1].Length += k
		} else {
			out = append(out, Extent{Offset: at, Length: k, Zero: zero})
		}
		at += k
	}
	return out
}

// streamWindow is how far (bytes, either way) a read may start from where
// a stream's reads ended and still continue it: room for a kernel's or an
// NBD client's requests arriving a little out of order, small against a
// chunk so that random reads rarely land in it.
const streamWindow = 256 << 10

// streamRun is how many reads must continue a stream, after the one that
// began it, before the Reader reads ahead of it: a random read that happens
// to land next to an earlier one does not start read-ahead (on a bucket,
// up to Options.Fetchers GETs).
const streamRun = 2

// stream is one recent reader's state: the byte end of its reads, the
// highest position it has read and how many reads continued it.
type stream struct {
	end int64
	pos int
	run int
}

// streams tracks up to 16 recent read streams, to tell sequential readers
// (several at once) from random reads.
type streams struct {
	mu   sync.Mutex
	s    [16]stream
	next int // slot replaced next
}

func (s *streams) reset() {
	for i := range s.s {
		s.s[i] = stream{end: -1 << 62, pos: -2}
	}
}

// advance records a read of bytes [off, end) at positions first … last and
// reports whether it is at least the streamRun-th read continuing a stream
// (it starts within streamWindow of where the stream's reads ended) and
// reaches a position the stream has not read before.
func (s *streams) advance(off, end int64, last int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.s {
		st := &s.s[i]
		if off >= st.end-streamWindow && off <= st.end+streamWindow {
			st.end = max(st.end, end)
			st.run++
			ahead := st.run >= streamRun && last > st.pos
			st.pos = max(st.pos, last)
			return ahead
		}
	}
	s.s[s.next] = stream{end: end, pos: last}
	s.next = (s.next + 1) % len(s.s)
	return false
}
