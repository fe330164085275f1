package repair

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Chunk is one distinct chunk of the scope, with what checking a copy of
// it takes.
type Chunk struct {
	Digest    crypto.Digest
	Length    int            // plaintext bytes
	Encrypted bool           // the archive's crypt mode is encrypt
	Key       *crypto.Config // decrypts it; nil for a plain chunk or CRCOnly
	// CRCOnly: the archive is encrypted and no key was given, so a copy
	// is checked by structure and CRC only (as verify --crc-only).
	CRCOnly bool
}

// chunkID tells chunks apart as verify does: digests of encrypted and
// plain archives live in different spaces, and a digest checked at one
// length proves nothing at another.
type chunkID struct {
	digest    crypto.Digest
	length    int
	encrypted bool
}

// Collect returns the distinct chunks of the index archives of snaps,
// read through store (the primary and the mirrors: an index the primary
// lost is read from a mirror), in the order first met, including the zero
// chunk a fixed index stands for by digest. keys gives each snapshot's key
// (nil: none). An encrypted chunk can only be proven with its key: a
// snapshot with encrypted archives that no key given opens is left out
// whole, with a *KeyMissingError among the errors, unless crcOnly is set:
// then its encrypted chunks are checked by structure and CRC only
// (Chunk.CRCOnly), as verify --crc-only checks them. A snapshot or archive
// whose chunk list could not be read is left out and named in the errors
// returned (each wraps the cause: chunkstore.Proven tells a damaged or
// missing one from one that could not be read).
func Collect(ctx context.Context, store chunkstore.Store, snaps []index.Snapshot, keys *snapshot.Keys, crcOnly bool) ([]Chunk, []error) {
	var (
		out  []Chunk
		errs []error
		seen = map[chunkID]bool{}
	)
	add := func(c Chunk) {
		id := chunkID{c.Digest, c.Length, c.Encrypted}
		if !seen[id] {
			seen[id] = true
			out = append(out, c)
		}
	}
	for _, s := range snaps {
		if ctx.Err() != nil {
			return out, append(errs, ctx.Err())
		}
		src, err := snapshot.OpenSnapshot(ctx, store, s, nil)
		var (
			cc     *crypto.Config
			keyErr error // why no key given opens the snapshot
		)
		if err == nil && keys != nil {
			cc, err = keys.ForManifest(src.Manifest())
			var ke *snapshot.KeyError
			if errors.As(err, &ke) && ke.Status != snapshot.KeyUnopened {
				cc, keyErr, err = nil, err, nil // no key given opens it
			}
		}
		if err == nil {
			if err = src.Manifest().Check(cc); cc == nil && errors.Is(err, index.ErrMissingKey) {
				keyErr, err = cmp.Or(keyErr, err), nil
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("snapshot %s: %w", s, err))
			continue
		}
		if keyErr != nil && !crcOnly && hasEncrypted(src.Manifest()) {
			errs = append(errs, newKeyMissing(s, keyErr))
			continue
		}
		for _, f := range src.Manifest().Files {
			if !strings.HasSuffix(f.Filename, ".fidx") && !strings.HasSuffix(f.Filename, ".didx") {
				continue
			}
			enc := f.CryptMode == index.CryptEncrypt
			unkeyed := enc && cc == nil
			var plan *restore.Plan
			if unkeyed {
				plan, _, err = restore.LoadPlanUnkeyed(ctx, src, s.Dir(), src.Manifest(), f.Filename)
			} else {
				plan, _, err = restore.LoadPlan(ctx, src, s.Dir(), src.Manifest(), f.Filename, cc)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("snapshot %s: %s: %w", s, f.Filename, err))
				continue
			}
			key := cc
			if !enc || unkeyed {
				key = nil
			}
			for _, c := range plan.Chunks {
				add(Chunk{Digest: c.Digest, Length: c.Length, Encrypted: enc, Key: key, CRCOnly: unkeyed})
			}
			if len(plan.Zero) > 0 && plan.ChunkSize > 0 {
				add(Chunk{Digest: plan.ZeroDigest, Length: int(plan.ChunkSize), Encrypted: enc, Key: key, CRCOnly: unkeyed})
			}
		}
	}
	return out, errs
}

// hasEncrypted reports whether m lists an encrypted archive.
func hasEncrypted(m *index.Manifest) bool {
	for _, f := range m.Files {
		if f.CryptMode == index.CryptEncrypt {
			return true
		}
	}
	return false
}

// KeyMissingError says a snapshot was not repaired: it has encrypted
// archives, no key given opens them, and checking their chunks by CRC
// only was not asked for (Collect's crcOnly). It is no damage of the
// data: nothing of the snapshot was checked or copied.
type KeyMissingError struct {
	Snapshot index.Snapshot
	// Status is snapshot.KeyMissing or snapshot.KeyMismatch.
	Status string
	// Fingerprint is the key fingerprint the manifest names ("" when it
	// names none).
	Fingerprint string
	// Err is why no key opens it (a *snapshot.KeyError or
	// index.ErrMissingKey).
	Err error
}

// newKeyMissing returns the KeyMissingError of snapshot s for err.
func newKeyMissing(s index.Snapshot, err error) *KeyMissingError {
	e := &KeyMissingError{Snapshot: s, Status: snapshot.KeyMissing, Err: err}
	var ke *snapshot.KeyError
	switch {
	case errors.As(err, &ke):
		e.Status = ke.Status
		if ke.Fingerprint != (crypto.Fingerprint{}) {
			e.Fingerprint = ke.Fingerprint.String()
		}
	case errors.Is(err, index.ErrWrongKey):
		e.Status = snapshot.KeyMismatch
	}
	return e
}

// Error names the snapshot, the status and the key, and what to do.
func (e *KeyMissingError) Error() string {
	return fmt.Sprintf("snapshot %s: %s: not repaired: an encrypted chunk can only be proven with its key (give --keyfile, or --crc-only to copy chunks checked by structure and CRC only): %v", e.Snapshot, e.Status, e.Err)
}

// Unwrap returns Err.
func (e *KeyMissingError) Unwrap() error { return e.Err }
