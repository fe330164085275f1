package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// What an Item is about (Item.Kind).
const (
	KindChunk    = "chunk"    // a chunk (Item.Digest)
	KindIndex    = "index"    // a .fidx or .didx archive of a snapshot (Item.File)
	KindBlob     = "blob"     // a .blob archive of a snapshot (Item.File)
	KindManifest = "manifest" // a snapshot's index.json.blob (Item.File)
	KindOwner    = "owner"    // a group's owner file (Item.File), copied with a snapshot recreated
)

// maxOwner is the most bytes of a group's owner file repair copies: one
// line naming a user or token.
const maxOwner = 1024

// ActionNotReplaced is the Action of a primary's manifest that is there
// but differs from the mirrors' (damaged, or another snapshot's content):
// repair never replaces an existing manifest; it is reported (Item.Source
// naming the first --from store whose copy reads, if any), and the
// snapshot's files are not repaired against either.
const ActionNotReplaced = "not replaced"

// FileCounts are a repair's totals in snapshot files (manifests, index
// and blob archives).
type FileCounts struct {
	Checked  int `json:"checked"`    // checked in the primary
	Good     int `json:"good"`       // good in the primary
	Repaired int `json:"repaired"`   // copied into the primary
	Would    int `json:"would-copy"` // dry run: would be copied
	NoCopy   int `json:"no-good-copy"`
	// NotReplaced counts the primary's manifests that differ from the
	// mirrors' and were left as they are (ActionNotReplaced).
	NotReplaced int `json:"not-replaced,omitempty"`
	Failed      int `json:"failed"` // a store could not be read, or the primary written
}

// maxFile is the most bytes of a snapshot file repair reads into memory:
// an index as large as restore reads one whole (restore.MaxUnsizedIndex).
const maxFile = restore.MaxUnsizedIndex

// Files checks the files of each snapshot of snaps in the primary against
// the snapshot's manifest, as verify checks them (an index's csum and
// size, a blob's SHA-256 and size), and copies each that is missing or
// damaged from the first --from store whose copy matches the manifest
// (chunkstore.WriteStore.WriteFile: atomic; never through a symbolic
// link). A manifest missing in the primary is copied from the mirrors
// when all that hold one hold the same (bytes, or signature and archive
// list), after the snapshot's other files, so that the snapshot appears
// whole; one that is there but differs is never replaced
// (ActionNotReplaced). The items come in the order of snaps, then of the
// manifest; once a write into the primary failed (Stopped), the snapshots
// not yet checked are left; when ctx ends Files returns what it has and
// ctx's error.
func (r *Repairer) Files(ctx context.Context, snaps []index.Snapshot) ([]Item, FileCounts, error) {
	var (
		items []Item
		n     FileCounts
	)
	add := func(it Item) {
		switch it.Action {
		case ActionCopied:
			n.Repaired++
		case ActionWouldCopy:
			n.Would++
		case ActionNoCopy:
			n.NoCopy++
		case ActionNotReplaced:
			n.NotReplaced++
		default:
			n.Failed++
		}
		items = append(items, it)
		if r.opts.Each != nil {
			r.opts.Each(it)
		}
	}
	for _, s := range snaps {
		if ctx.Err() != nil {
			return items, n, ctx.Err()
		}
		if r.Stopped() != nil {
			return items, n, nil // a write into the primary failed
		}
		m, mit := r.manifest(ctx, s)
		n.Checked++
		if mit == nil {
			n.Good++
		}
		if m == nil {
			if ctx.Err() != nil {
				return items, n, ctx.Err()
			}
			add(*mit)
			continue
		}
		release := func() error { return nil }
		if mit != nil && !r.opts.DryRun {
			// A snapshot without a manifest may be one a backup is
			// writing: claimed as a backup claims it, and looked at again.
			var err error
			if release, err = r.primary.ClaimSnapshot(ctx, s.Dir()); err != nil {
				mit.Action, mit.WriteError = ActionFailed, fmt.Sprintf("not copied: the snapshot could not be claimed as a backup claims it: %v", err)
				add(*mit)
				continue
			}
			if _, err := snapshot.ReadManifest(ctx, r.primary, s); !errors.Is(err, snapshot.ErrNoSnapshot) {
				release()
				mit.Action, mit.WriteError = ActionFailed, "not copied: the snapshot's manifest appeared meanwhile (another writer): run repair again"
				add(*mit)
				continue
			}
		}
		// unmended is the action of the snapshot's files that could not
		// be repaired ("" when all were): ActionFailed when any failed.
		unmended := ""
		for i := range m.Files {
			f := &m.Files[i]
			it := r.file(ctx, s, m, f)
			if ctx.Err() != nil {
				release()
				return items, n, ctx.Err()
			}
			n.Checked++
			if it == nil {
				n.Good++
				continue
			}
			if it.Action != ActionCopied && it.Action != ActionWouldCopy && unmended != ActionFailed {
				unmended = it.Action
			}
			add(*it)
		}
		if mit != nil {
			if unmended != "" {
				mit.Action = unmended
				mit.WriteError = "not copied: files of the snapshot could not be repaired (see their lines)"
			} else if oit := r.owner(ctx, s, mit.src); oit != nil {
				// The group's owner before the manifest, as a backup
				// writes them.
				n.Checked++
				add(*oit)
			}
			if unmended == "" && !r.opts.DryRun {
				r.writeFile(ctx, mit, func(ctx context.Context, st chunkstore.Store) error {
					_, err := snapshot.ReadManifest(ctx, st, s)
					return err
				})
			}
			if err := release(); err != nil && mit.Action == ActionCopied {
				mit.Action, mit.WriteError = ActionFailed, fmt.Sprintf("copied, but releasing the snapshot's claim failed: %v", err)
			}
			add(*mit)
		}
	}
	return items, n, nil
}

// manifestCopy is one mirror's copy of a manifest.
type manifestCopy struct {
	store chunkstore.Store
	raw   []byte
	m     *index.Manifest
}

// manifest returns the manifest the snapshot's files are checked against:
// the primary's, or when the primary has none, the mirrors' (an Item for
// copying it, carrying its bytes in data). A nil manifest (with an Item)
// says the snapshot's files cannot be checked.
func (r *Repairer) manifest(ctx context.Context, s index.Snapshot) (*index.Manifest, *Item) {
	rel := path.Join(s.Dir(), snapshot.ManifestName)
	it := &Item{Kind: KindManifest, File: rel}
	m, err := snapshot.ReadManifest(ctx, r.primary, s)
	if err == nil {
		return m, nil
	}
	it.Error = err.Error()
	if !errors.Is(err, snapshot.ErrNoSnapshot) {
		if !restore.Proven(err) {
			it.Action = ActionFailed
			return nil, it
		}
		it.Problem, it.Action = ProblemDamaged, ActionNotReplaced
		it.WriteError = "an existing manifest is never replaced: compare it with the mirrors' and replace it by hand"
		// Where a good copy is, for the one who replaces it (Source).
		for _, st := range r.from {
			if _, err := snapshot.ReadManifest(ctx, st, s); err == nil {
				it.Source = st.String()
				it.WriteError = fmt.Sprintf("an existing manifest is never replaced: a good copy exists on %s; replace it by hand after checking", st)
				break
			}
		}
		return nil, it
	}
	it.Problem = ProblemMissing
	var copies []manifestCopy
	unread := false
	for _, st := range r.from {
		raw, err := chunkstore.ReadFile(ctx, st, rel)
		var mm *index.Manifest
		if err == nil {
			mm, err = snapshot.ReadManifest(ctx, &memStore{Store: st, rel: rel, data: raw}, s)
		}
		if ctx.Err() != nil {
			return nil, it
		}
		if err != nil {
			unread = unread || !restore.Proven(err) && !errors.Is(err, snapshot.ErrNoSnapshot)
			it.Tried = append(it.Tried, st.String()+": "+err.Error())
			continue
		}
		copies = append(copies, manifestCopy{st, raw, mm})
	}
	for _, c := range copies[min(1, len(copies)):] {
		if !sameManifest(copies[0], c) {
			it.Action = ActionNoCopy
			it.WriteError = fmt.Sprintf("the mirrors hold different manifests of this snapshot (%s and %s): none copied; compare them and copy the right one by hand", copies[0].store, c.store)
			return nil, it
		}
	}
	switch {
	case len(copies) == 0 && unread:
		it.Action, it.WriteError = ActionFailed, "no copy in the stores that could be read, and a store could not be read (see tried)"
		return nil, it
	case len(copies) == 0:
		it.Action = ActionNoCopy
		return nil, it
	}
	it.Source, it.data, it.src = copies[0].store.String(), copies[0].raw, copies[0].store
	it.Action = ActionWouldCopy
	return copies[0].m, it
}

// owner copies the owner file of snapshot s's group from src (the mirror
// whose manifest recreates s) into the primary when the primary's group
// has none and src's has one: atomically, as the other files, checked
// just before so that an owner there is never replaced. It returns the
// Item (ActionCopied, ActionWouldCopy in a dry run, ActionFailed), or nil
// when nothing was to be copied.
func (r *Repairer) owner(ctx context.Context, s index.Snapshot, src chunkstore.Store) *Item {
	if src == nil {
		return nil
	}
	rel := path.Join(s.GroupDir(), "owner")
	if _, err := readFile(ctx, r.primary, rel); err == nil || !chunkstore.Missing(err) {
		return nil // there (never replaced), or not known to be missing
	}
	data, err := readFile(ctx, src, rel)
	if err != nil {
		return nil // the mirror has none either (or it cannot be read): nothing to copy
	}
	it := &Item{Kind: KindOwner, File: rel, Problem: ProblemMissing, Error: rel + ": missing in the primary's group", Source: src.String(), data: data}
	switch {
	case len(data) > maxOwner || bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n")) > 0:
		it.Action, it.WriteError = ActionFailed, fmt.Sprintf("not copied: %s's owner file is not one line of at most %d bytes", src, maxOwner)
	case r.opts.DryRun:
		it.Action = ActionWouldCopy
	default:
		// Looked at again just before the write: one that appeared
		// meanwhile (a backup) is left as it is.
		if _, err := readFile(ctx, r.primary, rel); err == nil || !chunkstore.Missing(err) {
			return nil
		}
		r.writeFile(ctx, it, func(ctx context.Context, st chunkstore.Store) error {
			got, err := readFile(ctx, st, rel)
			if err == nil && !bytes.Equal(got, data) {
				err = fmt.Errorf("%s: other bytes read back", rel)
			}
			return err
		})
	}
	return it
}

// sameManifest reports whether two mirrors' manifests are the same
// snapshot's: the same bytes, or the same signature and archives (the
// unsigned part, such as a verify state, may differ).
func sameManifest(a, b manifestCopy) bool {
	if bytes.Equal(a.raw, b.raw) {
		return true
	}
	return a.m.Signature != nil && b.m.Signature != nil && *a.m.Signature == *b.m.Signature &&
		a.m.BackupType == b.m.BackupType && a.m.BackupID == b.m.BackupID && a.m.BackupTime == b.m.BackupTime &&
		slices.Equal(a.m.Files, b.m.Files)
}

// file checks the archive f of snapshot s in the primary against m and
// repairs it; nil when the primary's copy is good.
func (r *Repairer) file(ctx context.Context, s index.Snapshot, m *index.Manifest, f *index.FileInfo) *Item {
	rel := path.Join(s.Dir(), f.Filename)
	kind := KindBlob
	if !strings.HasSuffix(f.Filename, ".blob") {
		kind = KindIndex
	}
	checkIn := func(ctx context.Context, st chunkstore.Store) error {
		return checkFile(ctx, st, s, m, f.Filename)
	}
	err := checkIn(ctx, r.primary)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	it := &Item{Kind: kind, File: rel, Error: err.Error()}
	if !restore.Proven(err) {
		it.Action = ActionFailed
		return it
	}
	it.Problem = ProblemDamaged
	if chunkstore.Missing(err) {
		it.Problem = ProblemMissing
	}
	unread := false
	for _, st := range r.from {
		data, err := readFile(ctx, st, rel)
		if err == nil {
			err = checkIn(ctx, &memStore{Store: st, rel: rel, data: data})
		}
		if ctx.Err() != nil {
			return it
		}
		if err == nil {
			it.Source, it.data = st.String(), data
			break
		}
		unread = unread || !restore.Proven(err)
		it.Tried = append(it.Tried, st.String()+": "+err.Error())
	}
	switch {
	case it.data == nil && unread:
		it.Action, it.WriteError = ActionFailed, "no good copy in the stores that could be read, and a store could not be read (see tried)"
	case it.data == nil:
		it.Action = ActionNoCopy
	case r.opts.DryRun:
		it.Action = ActionWouldCopy
	default:
		r.writeFile(ctx, it, checkIn)
	}
	return it
}

// writeFile writes it.data, a good copy, as it.File into the primary
// and checks it there after with check.
func (r *Repairer) writeFile(ctx context.Context, it *Item, check func(context.Context, chunkstore.Store) error) {
	if err := r.primary.WriteFile(ctx, it.File, it.data); err != nil {
		r.writeFailed(ctx, err)
		it.Action, it.WriteError = ActionFailed, err.Error()
		return
	}
	if err := check(ctx, r.primary); err != nil {
		it.Action, it.WriteError = ActionFailed, fmt.Sprintf("%s: written to %s, but reading it back failed: %v", it.File, r.primary, err)
		return
	}
	it.Action = ActionCopied
}

// checkFile checks the archive name of snapshot s in st against m as
// verify does: an index's recomputed csum and size (any crypt mode, no
// key needed), a blob's SHA-256 and size.
func checkFile(ctx context.Context, st chunkstore.Store, s index.Snapshot, m *index.Manifest, name string) error {
	if strings.HasSuffix(name, ".blob") {
		_, err := snapshot.CheckBlob(ctx, st, s, m, name)
		return err
	}
	_, _, err := restore.LoadPlanUnkeyed(ctx, st, s.Dir(), m, name)
	return err
}

// readFile reads the content file rel of st whole, at most maxFile bytes.
func readFile(ctx context.Context, st chunkstore.Store, rel string) ([]byte, error) {
	rc, size, err := st.OpenFile(ctx, rel)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > maxFile {
		return nil, fmt.Errorf("%s: %w: %d bytes, repair reads at most %d", rel, chunkstore.ErrTooLarge, size, maxFile)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", rel, chunkstore.ErrTooLarge, maxFile)
	}
	if size >= 0 && int64(len(data)) != size {
		return nil, fmt.Errorf("%s: %d bytes read, %d announced", rel, len(data), size)
	}
	return data, nil
}

// memStore is st with the content file rel read already (data): the
// bytes checked are the bytes then written.
type memStore struct {
	chunkstore.Store
	rel  string
	data []byte
}

func (m *memStore) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	if rel != m.rel {
		return m.Store.OpenFile(ctx, rel)
	}
	return io.NopCloser(bytes.NewReader(m.data)), int64(len(m.data)), nil
}
