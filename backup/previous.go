package backup

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// previous is what a backup takes from the newest finished snapshot of its
// group with its crypt mode and key (loadPrevious), as
// proxmox-backup-client takes the newest: the chunks of the archives it
// writes again, which it counts on without compressing, asking or
// uploading them. Only a snapshot the backup can trust is taken: same
// crypt mode and key fingerprint (its signature checked with the key),
// not marked failed by a verify ("verify_state"), each index whole
// (csum and size as its manifest says).
type previous struct {
	snap  index.Snapshot
	known map[crypto.Digest]struct{}
	// On a store that tells when a chunk was last written
	// (chunkstore.ModTimer: a directory's stat, a bucket's HEAD without a
	// body), a known chunk is vouched for only when it is there, not empty,
	// and was written before the snapshot's manifest (not: rewritten
	// since, damaged by hand or copied in); it is then marked used for
	// garbage collection. On a store that cannot tell (GCS), the snapshot
	// is trusted as PBS trusts it.
	// On a store whose objects also carry the writer's time
	// (chunkstore.WriterStamper: S3), a chunk stamped in the manifest's
	// second is vouched for by those times (stampedBefore).
	mt      chunkstore.ModTimer
	ws      chunkstore.WriterStamper
	written chunkstore.Stamp
}

// loadPrevious returns the previous snapshot of snap's group in store for
// the archives named (manifest file names: "drive-scsi0.img.fidx", …),
// written with crypt mode crypt and key signer (nil: none): the newest
// earlier finished snapshot of that crypt mode and key among the group's
// previousSearch newest, or nil when there is none that can be trusted. A previous snapshot that cannot be
// read is not used (the backup then asks the store per chunk); notes says
// why (the snapshot, and what about it could not be used: the manifest,
// a failed verify state, the signature, an index), one line each, also
// for an index left out of a snapshot that is used; a snapshot of other
// crypt mode or key is passed over without a note. Notes hold no text read
// from the store but the snapshot's and index's names. Only the context's
// end is an error.
func loadPrevious(ctx context.Context, store chunkstore.Store, snap index.Snapshot, names map[string]bool, crypt index.CryptMode, signer *crypto.Config) (p *previous, notes []string, err error) {
	infos, err := snapshot.ListGroup(ctx, store, snap.NS, snap.Type, snap.ID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, []string{"the group's snapshots could not be listed"}, nil
	}
	var older []index.Snapshot
	for _, info := range infos {
		if info.Snapshot.Time < snap.Time {
			older = append(older, info.Snapshot)
		}
	}
	slices.SortFunc(older, func(a, b index.Snapshot) int { return cmp.Compare(b.Time, a.Time) })
	// The newest of the backup's crypt mode and key, among the newest
	// previousSearch snapshots: a plain backup after an encrypted one
	// still counts on the plain one before it.
	var last *index.Snapshot
	var m *index.Manifest
	for i := range older[:min(len(older), previousSearch)] {
		s := &older[i]
		note := func(why string) []string {
			return []string{"previous snapshot " + s.String() + " not used: " + why}
		}
		mi, err := snapshot.ReadManifest(ctx, store, *s)
		switch {
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case err != nil:
			return nil, note("its manifest could not be read or is damaged"), nil
		}
		if fp, hasFP, err := mi.KeyFingerprint(); err != nil {
			return nil, note("its manifest's key fingerprint does not parse"), nil
		} else if hasFP != (signer != nil) || (signer != nil && fp != signer.Fingerprint()) || !hasCryptMode(mi, names, crypt) {
			continue // another crypt mode or key: an older one may match
		}
		switch {
		case snapshot.VerifyState(mi) == "failed":
			return nil, note("a verify marked it failed"), nil
		case mi.Check(signer) != nil:
			return nil, note("its manifest's signature or contents do not check"), nil
		}
		last, m = s, mi
		break
	}
	if last == nil {
		return nil, nil, nil
	}
	note := func(why string) []string {
		return []string{"previous snapshot " + last.String() + " not used: " + why}
	}
	p = &previous{snap: *last, known: map[crypto.Digest]struct{}{}}
	if mt, ok := store.(chunkstore.ModTimer); ok {
		rel := path.Join(last.Dir(), snapshot.ManifestName)
		if ws, ok := store.(chunkstore.WriterStamper); ok {
			p.written, err = ws.FileStamp(ctx, rel)
			p.ws = ws
		} else {
			p.written.Server, err = mt.FileModTime(ctx, rel)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, note("the write time of its manifest could not be read"), nil
		}
		p.mt = mt
	}
	used := false
	var bad []string
	for _, fi := range m.Files {
		if !names[fi.Filename] || fi.CryptMode != crypt {
			continue
		}
		if err := p.loadIndex(ctx, store, m, fi); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			bad = append(bad, fi.Filename) // its chunks are asked for
			continue
		}
		used = true
	}
	if len(bad) > 0 {
		why := "index " + strings.Join(bad, ", ") + " missing or damaged"
		if used {
			notes = []string{"previous snapshot " + last.String() + ": " + why + " (its chunks are asked for)"}
		} else {
			notes = note(why)
		}
	}
	if !used {
		return nil, notes, nil
	}
	return p, notes, nil
}

// previousSearch is how many of a group's snapshots, newest first, a backup
// reads the manifests of in search of one of its crypt mode and key.
const previousSearch = 10

// hasCryptMode reports whether manifest m lists one of the archives named
// with crypt mode crypt.
func hasCryptMode(m *index.Manifest, names map[string]bool, crypt index.CryptMode) bool {
	for _, fi := range m.Files {
		if names[fi.Filename] && fi.CryptMode == crypt {
			return true
		}
	}
	return false
}

// loadIndex adds the digests of the index fi of the previous snapshot to
// p.known, once it has read the whole index and found its csum and size
// those of manifest m.
func (p *previous) loadIndex(ctx context.Context, store chunkstore.Store, m *index.Manifest, fi index.FileInfo) error {
	rc, size, err := store.OpenFile(ctx, path.Join(p.snap.Dir(), fi.Filename))
	if err != nil {
		return err
	}
	defer rc.Close()
	r := bufio.NewReaderSize(rc, 1<<20)
	var digests []crypto.Digest
	var csum [32]byte
	var total uint64
	switch {
	case strings.HasSuffix(fi.Filename, ".fidx"):
		fr, err := index.NewFixedReader(r, size)
		if err != nil {
			return err
		}
		batch := make([]crypto.Digest, 1024)
		for {
			_, n, err := fr.NextBatch(batch)
			digests = append(digests, batch[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		csum, total = fr.Csum(), fr.Header().Size
	case strings.HasSuffix(fi.Filename, ".didx"):
		dr, err := index.NewDynamicReader(r, size)
		if err != nil {
			return err
		}
		for {
			_, e, err := dr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			digests = append(digests, e.Digest)
		}
		csum, total = dr.Csum(), dr.Size()
	default:
		return errors.New("not an index")
	}
	if err := m.VerifyFile(fi.Filename, total, csum); err != nil {
		return err
	}
	for _, d := range digests {
		p.known[d] = struct{}{}
	}
	return nil
}

// vouches reports whether the backup may count on the stored chunk for d
// without asking the store for it: d is in the previous snapshot's indexes
// and, on a store that can tell (ModTimer), its chunk is there, not empty,
// and written before the previous snapshot's manifest (stampedBefore); it
// is then marked used (TouchChunk). A chunk it does not vouch for is
// checked as any other; stored says the store, asked for its time, said it
// has the chunk, not empty (written in or after the manifest's time step),
// so that it need not be asked again before it is read back and checked.
func (p *previous) vouches(ctx context.Context, d crypto.Digest) (vouched, stored bool) {
	if p == nil {
		return false, false
	}
	if _, ok := p.known[d]; !ok {
		return false, false
	}
	if p.mt == nil {
		return true, false
	}
	var size int64
	var st chunkstore.Stamp
	var err error
	if p.ws != nil {
		size, st, err = p.ws.ChunkStamp(ctx, d)
	} else {
		size, st.Server, err = p.mt.ChunkModTime(ctx, d)
	}
	if err != nil || size == 0 {
		return false, false
	}
	if !stampedBefore(st, p.written, p.mt.ModTimeResolution()) {
		return false, true
	}
	return p.mt.TouchChunk(ctx, d) == nil, false
}

// writtenBefore reports whether a chunk stamped chunk was written before a
// manifest stamped manifest, by times of a store whose resolution is res:
// strictly before, and on a store that stamps whole seconds or coarser
// (S3's Last-Modified) by whole steps on both sides, so that a chunk
// written, or rewritten, in the step the manifest was written in is never
// taken as older. A backup writes its manifest right after its last chunk,
// so its last chunks may share the manifest's step: the next backup asks
// for those and reads them back. Finer times (a directory's nanoseconds, a
// clock tick apart; GCS's milliseconds) are compared as they are: a chunk
// rewritten in the tick the manifest was written in has its time, so is
// not before it either.
func writtenBefore(chunk, manifest time.Time, res time.Duration) bool {
	if res >= time.Second {
		chunk, manifest = chunk.Truncate(res), manifest.Truncate(res)
	}
	return chunk.Before(manifest)
}

// stampedBefore reports whether a chunk stamped chunk was written before a
// manifest stamped manifest, on a store whose server times have
// resolution res: by the server times as writtenBefore compares them; or,
// when both fall in the same step (a backup writes its manifest right
// after its last chunks), by the writer's times both objects carry
// (chunkstore.Stamp.Writer), the chunk's strictly before the manifest's.
// Without both writer's times (one is absent or did not parse) a chunk of
// the manifest's step is not taken as older.
//
// Why that is safe: pbsdirect records its clock in every object it PUTs,
// and PUTs a snapshot's manifest only after every chunk PUT of the backup
// returned, so within one writer the chunks' times precede the
// manifest's. A chunk overwritten after the manifest by anything that
// does not record the time (PBS, a damaged copy uploaded by hand) loses
// the metadata and is read back and checked. What remains is a chunk
// rewritten within the manifest's second by another pbsdirect (or by a
// copy keeping the object's metadata) whose clock runs behind: that
// writer wrote the chunk from its data (or healed it after a check), so
// the content it left is good; and an object damaged in place on the disk
// of a file-backed S3 server, which keeps its metadata, within the
// manifest's second (damage at any later time gets a later second). A
// store that lies can fake both times, as it can fake Last-Modified alone.
func stampedBefore(chunk, manifest chunkstore.Stamp, res time.Duration) bool {
	if writtenBefore(chunk.Server, manifest.Server, res) {
		return true
	}
	c, m := chunk.Server, manifest.Server
	if res >= time.Second {
		c, m = c.Truncate(res), m.Truncate(res)
	}
	if !c.Equal(m) || chunk.Writer.IsZero() || manifest.Writer.IsZero() {
		return false
	}
	return chunk.Writer.Before(manifest.Writer)
}

// archiveIndexNames returns the manifest file names of the indexes a
// backup of sources writes (as Run names them), for loadPrevious.
func archiveIndexNames(sources []Source, legacy bool) map[string]bool {
	names := map[string]bool{}
	for _, s := range sources {
		base := strings.TrimSuffix(s.Name, path.Ext(s.Name))
		switch path.Ext(s.Name) {
		case ".img":
			names[s.Name+".fidx"] = true
		case ".pxar":
			if legacy {
				names[s.Name+".didx"] = true
				names[catalogName] = true
			} else {
				names[base+".mpxar.didx"] = true
				names[base+".ppxar.didx"] = true
			}
		}
	}
	return names
}
