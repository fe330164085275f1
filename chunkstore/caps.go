package chunkstore

import (
	"context"
	"io"
)

// FileOpener opens a datastore's content files (see Store.OpenFile). A
// Store is one; so is a reader of one snapshot that reads its files from
// the member of a chain that holds its manifest.
type FileOpener interface {
	// OpenFile opens the content file rel for streaming and returns its
	// size in bytes, or -1 when unknown; a missing file returns an error
	// wrapping ErrNotFound.
	OpenFile(ctx context.Context, rel string) (io.ReadCloser, int64, error)
}

// MemberStore is a store made of member stores read in order of
// preference (Chain): readers that must take related files from one copy
// (a snapshot's manifest and its indexes) pick the member themselves.
type MemberStore interface {
	Store
	// Members returns the member stores, in order of preference.
	Members() []Store
}

var _ MemberStore = (*Chain)(nil)
