package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

// Reader is one snapshot opened for reading: resolved, its manifest read
// and checked, its key chosen under the policy of Keys. On a store made of
// several copies (chunkstore.MemberStore) it is pinned to the member that
// holds the manifest: the snapshot's indexes and blobs are read from that
// member first (the others only when it lacks one), so that the manifest
// and the files it vouches for come from one copy; chunks come from the
// whole store. It is safe for concurrent use.
type Reader struct {
	store   chunkstore.Store
	pin     int // member that holds the manifest; -1 without members
	snap    index.Snapshot
	m       *index.Manifest
	key     *crypto.Config
	missing bool
}

// Error is an error that happened once the snapshot was resolved: it
// names the snapshot (TYPE/ID/TIME) for reports and says what Err says.
type Error struct {
	Snapshot index.Snapshot
	Err      error
}

// Error returns Err's message.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Open resolves ref ("TYPE/ID/TIME", or "TYPE/ID" for the group's latest,
// see Resolve) in namespace ns of store and opens the snapshot (see
// OpenSnapshot). Errors after the snapshot was resolved are an *Error
// naming it.
func Open(ctx context.Context, store chunkstore.Store, ns index.Namespace, ref string, keys *Keys) (*Reader, error) {
	snap, err := Resolve(ctx, store, ns, ref)
	if err != nil {
		return nil, err
	}
	r, err := OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		return nil, &Error{Snapshot: snap, Err: err}
	}
	return r, nil
}

// OpenSnapshot opens snap on store: it pins the member of a
// chunkstore.MemberStore whose copy of the manifest reads and passes its
// checks first (ReadManifest; a damaged copy in an earlier member is
// warned about and passed over, see readPinned), with keys compares it with the other
// members' copies (compareCopies) and picks the key and checks
// the manifest and its signature (Keys.Check). With keys nil the manifest
// is read without key checks (listings, master-key recovery) and Key is
// nil. A manifest that is gone because the snapshot was pruned meanwhile
// returns an error wrapping ErrRemoved.
func OpenSnapshot(ctx context.Context, store chunkstore.Store, snap index.Snapshot, keys *Keys) (*Reader, error) {
	r := &Reader{store: store, pin: -1, snap: snap}
	m, pin, err := readPinned(ctx, store, snap)
	if err != nil {
		return nil, err
	}
	r.m, r.pin = m, pin
	if keys != nil && r.pin >= 0 {
		compareCopies(ctx, store, snap, r.pin, m)
	}
	if keys != nil {
		if r.key, r.missing, err = keys.Check(m, snap); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Snapshot returns the snapshot read.
func (r *Reader) Snapshot() index.Snapshot { return r.snap }

// Manifest returns the snapshot's manifest, checked with Key.
func (r *Reader) Manifest() *index.Manifest { return r.m }

// Key returns the key the manifest was checked with: nil when the
// snapshot needs none, with CryptMode none, or when the manifest was read
// without keys.
func (r *Reader) Key() *crypto.Config { return r.key }

// WithKey returns a copy of r whose Key is cc, for a caller that picked the
// key and checked the manifest with it under a policy of its own (verify,
// which reads a snapshot without its key by structure and CRC): Blob and
// KeyFor then use cc.
func (r *Reader) WithKey(cc *crypto.Config) *Reader {
	c := *r
	c.key = cc
	return &c
}

// KeyMissing reports whether the manifest names a key that was not
// available (KeyOptions.AllowMissing, CryptMode none): its signature was
// not checked.
func (r *Reader) KeyMissing() bool { return r.missing }

// Store returns the store chunks are read from (the whole chain).
func (r *Reader) Store() chunkstore.Store { return r.store }

// Pinned returns the member store that holds the manifest, or the store
// itself when it has no members.
func (r *Reader) Pinned() chunkstore.Store {
	if ms, ok := r.store.(chunkstore.MemberStore); ok && r.pin >= 0 {
		return ms.Members()[r.pin]
	}
	return r.store
}

// File returns the manifest entry of the archive name (its size, csum and
// crypt mode); an error wrapping index.ErrNotInManifest when it has none.
func (r *Reader) File(name string) (*index.FileInfo, error) { return r.m.File(name) }

// KeyFor returns the key for the archive fi: Key for an encrypted archive,
// nil otherwise.
func (r *Reader) KeyFor(fi *index.FileInfo) *crypto.Config {
	if fi.CryptMode == index.CryptEncrypt {
		return r.key
	}
	return nil
}

// readPinned reads snap's manifest (ReadManifest) from the first member of
// store (a chunkstore.MemberStore) whose copy reads and passes its checks,
// and returns it with that member's index (-1 for a store without
// members, read as a whole). A member whose copy is damaged (CRC, decoding,
// a manifest that does not parse or names another snapshot) is passed
// over, with a warning through store (chunkstore.Warn) naming the store
// and the damage; one without the snapshot, or that cannot be read, is
// passed over silently. When no member has a good copy but one had a
// damaged one, the error joins every member's (and, for a chain, those of
// the stores left out when it was opened): damage is proven only when no
// copy could have been good. Otherwise the error is the whole store's, as
// without members (wrapping ErrRemoved for a snapshot pruned meanwhile).
func readPinned(ctx context.Context, store chunkstore.Store, snap index.Snapshot) (*index.Manifest, int, error) {
	ms, ok := store.(chunkstore.MemberStore)
	if !ok {
		m, err := ReadManifest(ctx, store, snap)
		if err != nil {
			return nil, -1, Removed(ctx, store, snap, err)
		}
		return m, -1, nil
	}
	var errs []error
	damaged := false
	members := ms.Members()
	for i, member := range members {
		m, err := ReadManifest(ctx, member, snap)
		if err == nil {
			return m, i, nil
		}
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", member, err))
		if errors.Is(err, chunkstore.ErrNotFound) || errors.Is(err, ErrNoSnapshot) || chunkstore.Outside(err) {
			continue
		}
		damaged = true
		next := "no other --store has a good copy"
		if i+1 < len(members) {
			next = "trying the next --store"
		}
		chunkstore.Warn(store, "manifest-damaged\x00"+snap.Dir()+"\x00"+member.String(), fmt.Sprintf(
			"pbsdirect: warning: --store %s: the manifest of snapshot %s is damaged (%v); %s", member, snap, err, next))
	}
	if !damaged {
		m, err := ReadManifest(ctx, store, snap)
		if err != nil {
			return nil, -1, Removed(ctx, store, snap, err)
		}
		return m, -1, nil
	}
	if lo, ok := store.(chunkstore.LeftOutReporter); ok {
		errs = append(errs, lo.LeftOut()...)
	}
	return nil, -1, fmt.Errorf("%s: no store has an intact copy: %w", path.Join(snap.Dir(), ManifestName), chunkstore.JoinErrors(errs...))
}

// OpenFile opens the content file rel (datastore-relative) from the pinned
// member first, then from the other members in order of preference. When
// none has it, the error joins every member's (errors.Is finds
// chunkstore.ErrNotFound).
func (r *Reader) OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	ms, ok := r.store.(chunkstore.MemberStore)
	if !ok || r.pin < 0 {
		return r.store.OpenFile(ctx, rel)
	}
	members := ms.Members()
	order := []int{r.pin}
	for i := range members {
		if i != r.pin {
			order = append(order, i)
		}
	}
	var errs []error
	for _, i := range order {
		f, n, err := members[i].OpenFile(ctx, rel)
		if err == nil {
			return f, n, nil
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s: %w", members[i], err))
	}
	if len(errs) == 1 {
		return nil, 0, errs[0]
	}
	return nil, 0, fmt.Errorf("%s: in none of the stores: %w", rel, chunkstore.JoinErrors(errs...))
}

// OpenIndex opens the index archive name (.fidx, .didx) of the snapshot
// for streaming, with its manifest entry; the caller checks its content
// against the entry (restore.LoadPlan does).
func (r *Reader) OpenIndex(ctx context.Context, name string) (io.ReadCloser, int64, *index.FileInfo, error) {
	fi, err := r.m.File(name)
	if err != nil {
		return nil, 0, nil, err
	}
	f, n, err := r.OpenFile(ctx, path.Join(r.snap.Dir(), name))
	if err != nil {
		return nil, 0, fi, r.Removed(ctx, err)
	}
	return f, n, fi, nil
}

// Blob reads the blob archive name, checks it against the manifest (size,
// SHA-256) and decodes it with Key (see ReadBlob).
func (r *Reader) Blob(ctx context.Context, name string) ([]byte, error) {
	b, err := ReadBlob(ctx, r, r.snap, r.m, name, r.key)
	return b, r.Removed(ctx, err)
}

// CheckedBlob reads the blob archive name and checks it against the
// manifest without decoding it (see CheckBlob): no key is needed.
func (r *Reader) CheckedBlob(ctx context.Context, name string) ([]byte, error) {
	b, err := CheckBlob(ctx, r, r.snap, r.m, name)
	return b, r.Removed(ctx, err)
}

// Removed turns err, a failure to read a file of the snapshot, into one
// wrapping ErrRemoved when the whole snapshot is gone (see Removed).
func (r *Reader) Removed(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrRemoved) {
		return err
	}
	return Removed(ctx, r.store, r.snap, err)
}

// compareCopies reads the manifest of snap from every member of store but
// pin (one small read each) and has the store warn (chunkstore.Warn), once
// per snapshot, when one describes other archives than m, the pinned
// member's: the same snapshot name with other content (another disk
// behind the same name). It names the stores, which one is used, and how
// to use the other. A member without the snapshot or whose copy cannot be
// read is left alone, and one whose listing already failed is not asked:
// the chain's own warnings cover those.
func compareCopies(ctx context.Context, store chunkstore.Store, snap index.Snapshot, pin int, m *index.Manifest) {
	ms, ok := store.(chunkstore.MemberStore)
	if !ok {
		return
	}
	var unlisted []string // members already found unreadable: not asked again
	if pl, ok := store.(chunkstore.PartialLister); ok {
		unlisted = pl.Unlisted()
	}
	members := ms.Members()
	for i, other := range members {
		if i == pin || slices.Contains(unlisted, other.String()) {
			continue
		}
		om, err := ReadManifest(ctx, other, snap)
		if err != nil || sameArchives(m, om) {
			continue
		}
		chunkstore.Warn(store, "manifest\x00"+snap.Dir()+"\x00"+other.String(), fmt.Sprintf(
			"pbsdirect: warning: the stores disagree on snapshot %s: --store %s and --store %s hold different manifests (other archives, sizes or checksums); using --store %s's (the first --store that has it); give --store %s first to use the other",
			snap, members[pin], other, members[pin], other))
	}
}

// sameArchives reports whether manifests a and b describe the same
// snapshot content: the same archives with the same crypt modes, sizes and
// checksums (the unprotected part, such as a verify state, may differ).
func sameArchives(a, b *index.Manifest) bool {
	if a.BackupType != b.BackupType || a.BackupID != b.BackupID || a.BackupTime != b.BackupTime || len(a.Files) != len(b.Files) {
		return false
	}
	for i := range a.Files {
		if a.Files[i] != b.Files[i] {
			return false
		}
	}
	return true
}
