package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// DefaultChunkSize is the PBS fixed-index chunk size: 4 MiB (§3.2).
const DefaultChunkSize = 4 << 20

// Source is one archive to back up: Name as in proxmox-backup-client's spec
// "drive-scsi0.img:/path" (".img" → fixed index, ".pxar" → a directory as a
// pxar archive in dynamic indexes, ".conf"/".log" → blob), and the file,
// block device or directory to read.
type Source struct {
	Name string
	Path string
}

// ParseSpec parses "archive-name:/path/to/file". The name is
// [A-Za-z0-9_-]+ ending in ".img", ".pxar", ".conf" or ".log", as
// proxmox-backup-client's backup source schema has it.
func ParseSpec(spec string) (Source, error) {
	name, p, ok := strings.Cut(spec, ":")
	if !ok || name == "" || p == "" {
		return Source{}, fmt.Errorf("backup spec %q: want NAME.img:PATH or NAME.pxar:DIR (e.g. drive-scsi0.img:/dev/vg/vm-100-disk-0, root.pxar:/)", spec)
	}
	switch path.Ext(name) {
	case ".img", ".pxar", ".conf", ".log":
	default:
		return Source{}, fmt.Errorf("backup spec %q: archive name must end in .img (disk image), .pxar (directory), .conf or .log (blob)", spec)
	}
	base := strings.TrimSuffix(name, path.Ext(name))
	if base == "" || strings.Trim(base, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return Source{}, fmt.Errorf("backup spec %q: archive name %+q: want letters, digits, '_' and '-' before the extension, as proxmox-backup-client takes them", spec, name)
	}
	return Source{Name: name, Path: p}, nil
}

// Options configure a backup.
type Options struct {
	// Snapshot names the new snapshot; Time 0 means now.
	Snapshot index.Snapshot
	// Key encrypts chunks and blobs and signs the manifest (crypt mode
	// encrypt); nil writes plain archives and an unsigned manifest.
	Key *crypto.Config
	// SignOnly, with Key, writes plain chunks and blobs and only signs the
	// manifest (crypt mode sign-only, §5.6).
	SignOnly bool
	// ChunkSize in bytes, a power of two from 64 KiB to 4 MiB; 0 = 4 MiB.
	ChunkSize uint64
	// Jobs is the number of chunks written to the store at once (uploads
	// and existence checks in flight, each holding at most one chunk);
	// 0 = GOMAXPROCS (8×GOMAXPROCS hides a bucket's latency). The chunk
	// buffers in memory are bounded by BufferBudget whatever Jobs is.
	Jobs int
	// Encoders is the number of chunks compressed (and encrypted) at once,
	// one zstd encoder each, reused; 0 = GOMAXPROCS.
	Encoders int
	// NoPrevious asks the store for every chunk (and reads back and checks
	// each it has) instead of counting on the previous snapshot's chunks:
	// for a bucket whose chunks a verify found damaged (a bucket cannot
	// tell a rewritten chunk without a request for it).
	NoPrevious bool
	// Owner is written to the group's owner file when the group is new; default "root@pam".
	Owner string
	// RSAEncryptedKey, when set (with Key and not SignOnly), is written as
	// rsa-encrypted.key.blob: a plain, uncompressed blob listed with crypt
	// mode encrypt (§5.5). It is the key file encrypted under a master
	// public key (crypto.RSAEncryptKeyFile).
	RSAEncryptedKey []byte
	// PxarLegacy writes directories (".pxar" sources) as legacy pxar
	// archives, NAME.pxar.didx with a catalog.pcat1.didx beside them;
	// otherwise split, NAME.mpxar.didx and NAME.ppxar.didx, as
	// proxmox-backup-client writes them with --change-detection-mode data.
	PxarLegacy bool
	// IncludeDev lists paths whose file systems directories (".pxar"
	// sources) are read on too, as proxmox-backup-client's --include-dev;
	// otherwise a directory backup stays on its source's file system and
	// stores other mount points as empty directories (Result.Meta.OtherFS).
	IncludeDev []string
	// LeaveOut lists paths (the datastore written, when it is a
	// directory) left out of directory backups wherever they appear in a
	// source, compared by device and inode (Result.Meta.Skipped); one
	// that does not exist is ignored.
	LeaveOut []string
}

// Stats counts a backup's work; fields are updated atomically. The chunks
// of pxar archives (and their catalog) count as image chunks with data;
// ImageBytes counts their archive streams' bytes.
//
// Every chunk of the images is either all zeros (a full chunk of zeros:
// ZeroChunks, ZeroBytes) or has data. A chunk with data is written
// (Uploaded), found in the store (Existing) or a repeat of one handled
// earlier in this run (DedupHits), so Chunks = ZeroChunks + Uploaded +
// Existing + DedupHits, and Uploaded + Existing is the number of unique
// chunks with data: what a restore fetches and a verify checks. The zero
// chunk itself (one per chunk size and key, stored as PBS stores it, §7.1)
// is counted apart, in ZeroUploaded or ZeroExisting.
type Stats struct {
	ImageBytes    atomic.Uint64 // bytes of images covered
	Chunks        atomic.Uint64 // chunks of the images (index entries), all zeros or not
	ZeroChunks    atomic.Uint64 // of Chunks: full chunks of zeros (read back as zeros, never fetched)
	ZeroBytes     atomic.Uint64 // bytes of the ZeroChunks
	Uploaded      atomic.Uint64 // chunks with data written to the store
	Existing      atomic.Uint64 // chunks with data already in the store
	DedupHits     atomic.Uint64 // chunks with data repeating one handled earlier in this run
	ZeroUploaded  atomic.Uint64 // zero chunks written to the store (0 or 1)
	ZeroExisting  atomic.Uint64 // zero chunks already in the store (0 or 1)
	Replaced      atomic.Uint64 // chunks in the store found damaged and written again (also in Uploaded or ZeroUploaded)
	UploadedBytes atomic.Uint64 // encoded bytes written: the Uploaded and ZeroUploaded chunks
	// Of Existing: chunks the previous snapshot of the group lists, counted
	// on without compressing or asking the store (KnownPrevious), and
	// chunks an existence check (stat, HEAD) found, read back and checked
	// (FoundPresent; compressed only when an encoder was free before the
	// answer). The rest of Existing
	// were found at the write (a conditional write that found the chunk).
	KnownPrevious atomic.Uint64
	FoundPresent  atomic.Uint64
}

// BufferBudget is the most bytes of chunk buffers a backup keeps: chunks
// read and not yet encoded, and encoded chunks being uploaded, half each.
// Uploads in flight (Options.Jobs) beyond what it holds wait for a buffer.
// Only Encoders+1 chunks read ahead, kept whatever the budget, can exceed
// it (more than 23 encoders of 4 MiB chunks).
const BufferBudget = 192 << 20

// Result describes the written snapshot.
type Result struct {
	Snapshot index.Snapshot
	Manifest *index.Manifest
	// Replaced lists the chunks found damaged in the store and written
	// again (Stats.Replaced).
	Replaced []Replaced
	// Meta counts, over the pxar archives, the entries stored with
	// xattrs, ACLs and file capabilities and those whose ones could not
	// be read (stored without them).
	Meta pxar.TreeStats
	// Previous is the snapshot whose chunks the backup counted on without
	// asking the store (Stats.KnownPrevious), "" when none was used: the
	// newest finished snapshot of the group with the same crypt mode and
	// key, as proxmox-backup-client takes it.
	Previous string
	// PreviousNotes says, one line each, why the previous snapshot (or an
	// index of it) could not be counted on: "previous snapshot
	// vm/100/2026-… not used: its manifest could not be read or is
	// damaged". Empty when it was used whole, or when there was none of
	// the backup's crypt mode and key. Snapshot and archive names come from
	// the store: escape them to print (index.DisplayText).
	PreviousNotes []string
}

// ErrSnapshotExists is returned when the target snapshot already has a manifest.
var ErrSnapshotExists = errors.New("snapshot already exists")

// Run backs up sources into store as one snapshot and returns it. The
// manifest is written last, so an interrupted backup leaves an unfinished
// snapshot that readers ignore (§1.4). The store must implement
// chunkstore.SnapshotClaimer: the snapshot is claimed before anything is
// written, so of two concurrent backups of one snapshot one fails
// (chunkstore.ErrSnapshotBusy, or ErrSnapshotExists once the other
// finished).
func Run(ctx context.Context, store chunkstore.WriteStore, sources []Source, opts Options, stats *Stats) (res *Result, err error) {
	if len(sources) == 0 {
		return nil, errors.New("nothing to back up")
	}
	if stats == nil {
		stats = new(Stats)
	}
	if opts.ChunkSize == 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.ChunkSize < 64<<10 || opts.ChunkSize > 4<<20 || opts.ChunkSize&(opts.ChunkSize-1) != 0 {
		return nil, fmt.Errorf("chunk size %d: must be a power of two from 64 KiB to 4 MiB", opts.ChunkSize)
	}
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.Encoders <= 0 {
		opts.Encoders = runtime.GOMAXPROCS(0)
	}
	if opts.Owner == "" {
		opts.Owner = "root@pam"
	}
	snap := opts.Snapshot
	if snap.Time == 0 {
		snap.Time = time.Now().Unix()
	}
	dir := snap.Dir()
	seen := map[string]bool{}
	for _, s := range sources {
		if seen[s.Name] {
			return nil, fmt.Errorf("archive %s given twice", s.Name)
		}
		seen[s.Name] = true
	}

	if opts.SignOnly && opts.Key == nil {
		return nil, errors.New("crypt mode sign-only needs a key")
	}
	crypt := index.CryptNone
	signer := opts.Key
	switch {
	case opts.SignOnly:
		crypt = index.CryptSignOnly
		opts.Key = nil // chunks and blobs stay plain
	case opts.Key != nil:
		crypt = index.CryptEncrypt
	}
	// One writer per snapshot: claim it (the group lock and an exclusive
	// snapshot directory, or a bucket's conditional claim marker), then
	// check that it has no manifest yet.
	release, err := store.ClaimSnapshot(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if rc, _, err := store.OpenFile(ctx, path.Join(dir, "index.json.blob")); err == nil {
		rc.Close()
		return nil, fmt.Errorf("%s in %s: %w (snapshot times are whole seconds: wait a second or give a later --backup-time)", dir, store, ErrSnapshotExists)
	} else if !errors.Is(err, chunkstore.ErrNotFound) {
		return nil, err
	}
	m := &index.Manifest{BackupType: snap.Type, BackupID: snap.ID, BackupTime: snap.Time}
	var prev *previous
	var prevNotes []string
	if !opts.NoPrevious {
		if prev, prevNotes, err = loadPrevious(ctx, store, snap, archiveIndexNames(sources, opts.PxarLegacy), crypt, signer); err != nil {
			return nil, err
		}
	}
	w := newWriter(store, opts, stats, prev)
	defer w.close()
	for _, src := range sources {
		var fis []index.FileInfo
		switch path.Ext(src.Name) {
		case ".img":
			fi, err := w.image(ctx, dir, src)
			fis = append(fis, fi)
			if err != nil {
				return nil, err
			}
		case ".pxar":
			if fis, err = w.pxarArchive(ctx, dir, src); err != nil {
				return nil, err
			}
		default:
			fi, err := w.blob(ctx, dir, src)
			fis = append(fis, fi)
			if err != nil {
				return nil, err
			}
		}
		for _, fi := range fis {
			fi.CryptMode = crypt
			m.Files = append(m.Files, fi)
		}
	}
	if len(w.catalog) > 0 {
		fi, err := w.catalogIndex(ctx, dir)
		if err != nil {
			return nil, err
		}
		fi.CryptMode = crypt
		m.Files = append(m.Files, fi)
	}
	if len(opts.RSAEncryptedKey) > 0 {
		if crypt != index.CryptEncrypt {
			return nil, errors.New("an RSA-encrypted key goes only with crypt mode encrypt")
		}
		fi, err := w.plainBlob(ctx, dir, index.RSAKeyBlobName, opts.RSAEncryptedKey)
		if err != nil {
			return nil, err
		}
		fi.CryptMode = crypt
		m.Files = append(m.Files, fi)
	}
	if signer != nil {
		if err := m.Sign(signer); err != nil {
			return nil, err
		}
	}
	js, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	blob, err := enc.Encode(js, nil, true)
	if err != nil {
		return nil, err
	}
	groupDir := path.Dir(dir)
	if rc, _, err := store.OpenFile(ctx, path.Join(groupDir, "owner")); err == nil {
		rc.Close()
	} else if err := store.WriteFile(ctx, path.Join(groupDir, "owner"), []byte(opts.Owner+"\n")); err != nil {
		return nil, err
	}
	if err := w.settle(ctx); err != nil {
		return nil, err
	}
	if err := store.WriteFile(ctx, path.Join(dir, "index.json.blob"), blob); err != nil {
		return nil, err
	}
	res = &Result{Snapshot: snap, Manifest: m, Replaced: w.replaced, Meta: w.meta, PreviousNotes: prevNotes}
	if prev != nil {
		res.Previous = prev.snap.String()
	}
	return res, nil
}

type writer struct {
	store chunkstore.WriteStore
	opts  Options
	stats *Stats
	mu    sync.Mutex
	done  map[crypto.Digest]bool // digests written or found in this run
	prev  *previous              // chunks counted on without asking; nil: none
	// lastWrite is when the last chunk write ended (Unix ns; 0: none).
	lastWrite atomic.Int64
	// encoders holds Options.Encoders slots, each a reused encoder (nil
	// until first used); outBufs the buffers encoded chunks are built in,
	// one per upload in flight.
	encoders chan *chunkstore.Encoder
	outBufs  chan []byte
	// decoders holds decoders for checking stored chunks.
	decoders decoderPool
	replaced []Replaced     // damaged stored chunks replaced, under mu
	catalog  []*pxar.Node   // legacy pxar archives' trees, named as their .didx, for the catalog
	meta     pxar.TreeStats // the pxar archives' metadata counts
}

// blob backs up a small file as an encoded blob (§1.4).
func (w *writer) blob(ctx context.Context, dir string, src Source) (index.FileInfo, error) {
	data, err := os.ReadFile(src.Path)
	if err != nil {
		return index.FileInfo{}, err
	}
	name := src.Name + ".blob"
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		return index.FileInfo{}, err
	}
	defer enc.Close()
	blob, err := enc.Encode(data, w.opts.Key, true)
	if err != nil {
		return index.FileInfo{}, fmt.Errorf("%s: %w", src.Path, err)
	}
	if err := w.store.WriteFile(ctx, path.Join(dir, name), blob); err != nil {
		return index.FileInfo{}, err
	}
	return index.FileInfo{Filename: name, Size: uint64(len(blob)), Csum: sha256Sum(blob)}, nil
}

// plainBlob writes data as an unencrypted, uncompressed blob named name
// (rsa-encrypted.key.blob, §5.5).
func (w *writer) plainBlob(ctx context.Context, dir, name string, data []byte) (index.FileInfo, error) {
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		return index.FileInfo{}, err
	}
	defer enc.Close()
	blob, err := enc.Encode(data, nil, false)
	if err != nil {
		return index.FileInfo{}, err
	}
	if err := w.store.WriteFile(ctx, path.Join(dir, name), blob); err != nil {
		return index.FileInfo{}, err
	}
	return index.FileInfo{Filename: name, Size: uint64(len(blob)), Csum: sha256Sum(blob)}, nil
}

type piece struct {
	pos  uint64
	data []byte
	buf  []byte
}

// image backs up a disk image as a fixed index, reading it sequentially,
// skipping holes without reading them (SEEK_DATA), and encoding and
// uploading chunks on opts.Jobs workers.
func (w *writer) image(ctx context.Context, dir string, src Source) (index.FileInfo, error) {
	f, err := os.Open(src.Path)
	if err != nil {
		return index.FileInfo{}, err
	}
	defer f.Close()
	size, err := imageSize(f)
	if err != nil {
		return index.FileInfo{}, fmt.Errorf("%s: %w", src.Path, err)
	}
	if size == 0 {
		return index.FileInfo{}, fmt.Errorf("%s: empty image (a fixed index needs at least one chunk)", src.Path)
	}
	cs := w.opts.ChunkSize
	n := (size + cs - 1) / cs
	digests := make([]crypto.Digest, n)
	zeroDigest := w.opts.Key.ChunkDigest(make([]byte, cs))
	zeros := make([]byte, cs)
	zeroUsed := false

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errMu sync.Mutex
		first error
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		errMu.Unlock()
	}
	// Chunks read wait here for a worker: one per job, and one per
	// encoder besides, within half the buffer budget.
	bufs := make(chan []byte, max(w.opts.Encoders+1, min(w.opts.Jobs+w.opts.Encoders, BufferBudget/2/int(cs))))
	for range cap(bufs) {
		bufs <- make([]byte, cs)
	}
	work := make(chan piece)
	var wg sync.WaitGroup
	for range w.opts.Jobs {
		wg.Go(func() {
			for p := range work {
				if ctx.Err() != nil {
					bufs <- p.buf
					continue
				}
				d := w.opts.Key.ChunkDigest(p.data)
				digests[p.pos] = d
				if err := w.put(ctx, d, p.data, false, func() { bufs <- p.buf }); err != nil {
					fail(fmt.Errorf("%s: chunk at offset %d: %w", src.Path, p.pos*cs, err))
				}
			}
		})
	}

	dataEnd := func(off int64) int64 { // next data offset at or after off, size if none
		next, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, unix.ENXIO) {
				return int64(size)
			}
			return off // SEEK_DATA unsupported: read everything
		}
		return next
	}
	// PBS uploads the zero chunk of every disk (§7.1); readers never need
	// it. It is stored alongside the chunks with data, from the first
	// zero chunk on, not after them.
	useZero := func() {
		if zeroUsed {
			return
		}
		zeroUsed = true
		wg.Go(func() {
			if err := w.put(ctx, zeroDigest, zeros, true, nil); err != nil {
				fail(fmt.Errorf("%s: zero chunk: %w", src.Path, err))
			}
		})
	}
	nextData := int64(-1)
	for pos := uint64(0); pos < n && ctx.Err() == nil; pos++ {
		off := pos * cs
		length := min(cs, size-off)
		w.stats.Chunks.Add(1)
		w.stats.ImageBytes.Add(length)
		if length == cs {
			if nextData < int64(off) {
				nextData = dataEnd(int64(off))
			}
			if nextData >= int64(off+cs) {
				digests[pos] = zeroDigest
				useZero()
				w.stats.ZeroChunks.Add(1)
				w.stats.ZeroBytes.Add(cs)
				continue
			}
		}
		var buf []byte
		select {
		case buf = <-bufs:
		case <-ctx.Done():
		}
		if buf == nil {
			break
		}
		data := buf[:length]
		if _, err := f.ReadAt(data, int64(off)); err != nil {
			bufs <- buf
			fail(fmt.Errorf("%s: read %d bytes at offset %d: %w", src.Path, length, off, err))
			break
		}
		if length == cs && bytes.Equal(data, zeros) {
			digests[pos] = zeroDigest
			useZero()
			w.stats.ZeroChunks.Add(1)
			w.stats.ZeroBytes.Add(cs)
			bufs <- buf
			continue
		}
		work <- piece{pos: pos, data: data, buf: buf}
	}
	close(work)
	wg.Wait()
	if first != nil {
		return index.FileInfo{}, first
	}
	if err := ctx.Err(); err != nil {
		return index.FileInfo{}, err
	}
	name := src.Name + ".fidx"
	idx, csum, err := encodeFixedIndex(size, cs, digests)
	if err != nil {
		return index.FileInfo{}, err
	}
	if err := w.store.WriteFile(ctx, path.Join(dir, name), idx); err != nil {
		return index.FileInfo{}, err
	}
	return index.FileInfo{Filename: name, Size: size, Csum: csum}, nil
}

// imageSize returns the size of a regular file or block device in bytes.
func imageSize(f *os.File) (uint64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Mode().IsRegular() {
		return uint64(st.Size()), nil
	}
	if st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0 {
		return unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	}
	return 0, errors.New("not a regular file or block device")
}

// encodeFixedIndex builds the .fidx file for digests (§3) and returns it
// with its index csum.
func encodeFixedIndex(size, chunkSize uint64, digests []crypto.Digest) ([]byte, [32]byte, error) {
	h := index.FixedHeader{CTime: time.Now().Unix(), Size: size, ChunkSize: chunkSize}
	if _, err := rand.Read(h.UUID[:]); err != nil {
		return nil, [32]byte{}, err
	}
	h.UUID[6] = h.UUID[6]&0x0f | 0x40 // version 4
	h.UUID[8] = h.UUID[8]&0x3f | 0x80 // RFC 4122 variant
	b, err := index.BuildFixed(h, digests)
	if err != nil {
		return nil, [32]byte{}, err
	}
	var csum [32]byte
	copy(csum[:], b[0x20:0x40])
	return b, csum, nil
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
