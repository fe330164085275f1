package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// catalogName is the catalog of a snapshot's legacy pxar archives.
const catalogName = "catalog.pcat1.didx"

// dynPiece is one chunk cut from a dynamic stream, for an upload worker.
type dynPiece struct {
	s    *dynStream
	seq  int
	data []byte
}

// dynPool encodes and uploads the chunks of dynamic streams on
// opts.Jobs workers; the first error cancels its context.
type dynPool struct {
	w      *writer
	ctx    context.Context
	cancel context.CancelFunc
	work   chan dynPiece
	wg     sync.WaitGroup
	mu     sync.Mutex
	first  error
}

func (w *writer) newDynPool(ctx context.Context) (*dynPool, error) {
	p := &dynPool{w: w, work: make(chan dynPiece, w.opts.Jobs)}
	p.ctx, p.cancel = context.WithCancel(ctx)
	for range w.opts.Jobs {
		p.wg.Go(func() {
			for pc := range p.work {
				if p.ctx.Err() != nil {
					continue
				}
				d := w.opts.Key.ChunkDigest(pc.data)
				pc.s.setDigest(pc.seq, d)
				if err := w.put(p.ctx, d, pc.data, false, nil); err != nil {
					off, _ := pc.s.chunkRange(pc.seq)
					p.fail(fmt.Errorf("%s: chunk %s at offset %d: %w", pc.s.name, d, off, err))
				}
			}
		})
	}
	return p, nil
}

func (p *dynPool) fail(err error) {
	p.mu.Lock()
	if p.first == nil {
		p.first = err
		p.cancel()
	}
	p.mu.Unlock()
}

// close stops the workers once the queued chunks are done and returns the
// first error (or the context's).
func (p *dynPool) close() error {
	close(p.work)
	p.wg.Wait()
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

// dynStream is an io.Writer that cuts what is written into content-defined
// chunks and queues them for upload; its index entries are filled in as
// the workers hash the chunks.
type dynStream struct {
	pool    *dynPool
	name    string // the index file name, for errors
	chunker *Chunker
	avg     int
	buf     []byte
	end     uint64
	mu      sync.Mutex
	entries []index.DynamicEntry
}

func (p *dynPool) stream(name string, avg int) *dynStream {
	return &dynStream{pool: p, name: name, chunker: NewChunker(avg), avg: avg}
}

// Write cuts b into chunks; it fails once the backup has failed.
func (s *dynStream) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if err := s.pool.ctx.Err(); err != nil {
			return 0, err
		}
		cut := s.chunker.Scan(b)
		if cut == 0 {
			s.buf = append(s.buf, b...)
			break
		}
		s.buf = append(s.buf, b[:cut]...)
		b = b[cut:]
		if err := s.emit(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// emit queues the chunk in buf.
func (s *dynStream) emit() error {
	data := s.buf
	s.buf = make([]byte, 0, s.avg)
	s.end += uint64(len(data))
	s.mu.Lock()
	seq := len(s.entries)
	s.entries = append(s.entries, index.DynamicEntry{End: s.end})
	s.mu.Unlock()
	s.pool.w.stats.Chunks.Add(1)
	s.pool.w.stats.ImageBytes.Add(uint64(len(data)))
	select {
	case s.pool.work <- dynPiece{s: s, seq: seq, data: data}:
		return nil
	case <-s.pool.ctx.Done():
		return s.pool.ctx.Err()
	}
}

// flush queues the stream's last chunk.
func (s *dynStream) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	return s.emit()
}

func (s *dynStream) setDigest(seq int, d crypto.Digest) {
	s.mu.Lock()
	s.entries[seq].Digest = d
	s.mu.Unlock()
}

// chunkRange returns the archive offset and length of chunk seq.
func (s *dynStream) chunkRange(seq int) (off, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq > 0 {
		off = s.entries[seq-1].End
	}
	return off, s.entries[seq].End - off
}

// writeIndex writes the stream's .didx into the snapshot directory dir
// (all its chunks uploaded) and returns its manifest entry: the archive's
// size and the index csum (§6.2).
func (s *dynStream) writeIndex(ctx context.Context, store chunkstore.WriteStore, dir string) (index.FileInfo, error) {
	if len(s.entries) == 0 {
		return index.FileInfo{}, fmt.Errorf("%s: empty archive stream", s.name)
	}
	b, err := index.BuildDynamic(index.DynamicHeader{UUID: index.NewUUID(), CTime: time.Now().Unix()}, s.entries)
	if err != nil {
		return index.FileInfo{}, err
	}
	if err := store.WriteFile(ctx, path.Join(dir, s.name), b); err != nil {
		return index.FileInfo{}, err
	}
	var csum [32]byte
	copy(csum[:], b[0x20:0x40])
	return index.FileInfo{Filename: s.name, Size: s.end, Csum: csum}, nil
}

// pxarArchive backs up the directory src.Path as a pxar archive: split
// (NAME.mpxar.didx and NAME.ppxar.didx) or, with opts.PxarLegacy, one
// NAME.pxar.didx whose tree is kept for the catalog. The tree is read
// while it is encoded (file contents are opened one at a time, never held
// whole; it stays on the source's file system unless opts.IncludeDev
// says otherwise, and leaves opts.LeaveOut out), the encoder's streams are cut by the content-defined chunker and
// the chunks uploaded on opts.Jobs workers. Xattrs, ACLs and fcaps are
// read with the tree and counted into w.meta.
func (w *writer) pxarArchive(ctx context.Context, dir string, src Source) ([]index.FileInfo, error) {
	o := pxar.DirOptions{IncludeDev: w.opts.IncludeDev}
	for _, p := range w.opts.LeaveOut {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil {
			o.Skip = append(o.Skip, pxar.FileID{Dev: uint64(st.Dev), Ino: st.Ino})
		}
	}
	root, err := pxar.TreeFromDirOpts(src.Path, o, &w.meta)
	if err != nil {
		return nil, err
	}
	base := src.Name[:len(src.Name)-len(".pxar")]
	pool, err := w.newDynPool(ctx)
	if err != nil {
		return nil, err
	}
	var streams []*dynStream
	if w.opts.PxarLegacy {
		meta := pool.stream(base+".pxar.didx", DefaultDynamicChunkSize)
		streams = []*dynStream{meta}
		err = pxar.Encode(meta, nil, root)
	} else {
		meta := pool.stream(base+".mpxar.didx", DefaultDynamicChunkSize)
		payload := pool.stream(base+".ppxar.didx", DefaultDynamicChunkSize)
		streams = []*dynStream{meta, payload}
		err = pxar.Encode(meta, payload, root)
	}
	for _, s := range streams {
		if err == nil {
			err = s.flush()
		}
	}
	perr := pool.close()
	if perr != nil {
		return nil, perr
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("%s: %w", src.Path, err)
	}
	var fis []index.FileInfo
	for _, s := range streams {
		fi, err := s.writeIndex(ctx, w.store, dir)
		if err != nil {
			return nil, err
		}
		fis = append(fis, fi)
	}
	if w.opts.PxarLegacy {
		top := *root
		top.Name = streams[0].name
		w.catalog = append(w.catalog, &top)
	}
	return fis, nil
}

// catalogIndex writes catalog.pcat1.didx for the legacy pxar archives
// backed up (one top directory per archive, as the backup client writes
// it), cut with the catalog's average chunk size.
func (w *writer) catalogIndex(ctx context.Context, dir string) (index.FileInfo, error) {
	if len(w.catalog) == 0 {
		return index.FileInfo{}, errors.New("no pxar archive for a catalog")
	}
	pool, err := w.newDynPool(ctx)
	if err != nil {
		return index.FileInfo{}, err
	}
	s := pool.stream(catalogName, CatalogChunkSize)
	err = pxar.EncodeCatalog(s, &pxar.Node{Kind: pxar.KindDir, Metadata: w.catalog[0].Metadata, Children: w.catalog})
	if err == nil {
		err = s.flush()
	}
	if perr := pool.close(); perr != nil {
		return index.FileInfo{}, perr
	}
	if err != nil {
		return index.FileInfo{}, fmt.Errorf("catalog: %w", err)
	}
	return s.writeIndex(ctx, w.store, dir)
}
