// Package archive gives random access to one chunked archive of a snapshot
// (a fixed index, §3, or a dynamic index, §4) on any store, without
// restoring it: Reader is an io.ReaderAt, safe for concurrent use, that also
// reports the archive's size and its zero extents. It sits under mount,
// serve-nbd and restore to standard output.
//
// The algorithm: Open streams the index through restore.LoadPlan (which
// checks it against the manifest) and keeps one small entry per index
// position, the chunk it holds or "zero chunk". A read maps its byte range
// onto positions; zero chunks are served from nothing, never fetched; every
// other chunk comes from a cache keyed by digest and bounded in bytes
// (Options.CacheSize). A chunk missing from the cache is read from the store
// once, however many readers want it, and passes the restore's check
// (chunkstore.Decoder.DecodeChunk: crypt mode, CRC, AES-256-GCM, zstd,
// length, digest) before anyone sees a byte of it. A chunk that fails fails
// only the reads touching it, with a *restore.ChunkError naming its digest
// and range; it is not cached, so a later read tries again. Each failed
// chunk is logged once (Options.Log), at the first read that fails on it;
// a chunk that only read-ahead failed to load (no reader asked for its
// bytes) is neither logged nor counted.
//
// Reads that continue where an earlier read stopped (several streams at
// once, as from parallel NBD connections; within streamWindow bytes, at
// least streamRun of them after the first) are sequential: the Reader then
// reads the next chunks ahead, as many at a time as a restore fetches
// (Options.Fetchers), so that a streaming reader finds them decoded.
//
// Memory: Options.CacheSize bytes for decoded chunks and one encoded-chunk
// buffer per fetcher (at least two decoded chunks), plus the index map
// (4 bytes per fixed-index position, 12 per dynamic-index position, 40 per
// unique chunk).
//
// Where things go: a new way of serving an archive (another protocol,
// another file system) reads through Reader and lives in the command or in
// a package of its own that imports nothing of ours (as fusefs and nbd).
package archive
