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

// DirLister is a Store whose directories exist without files in them (a
// datastore directory): a namespace that PBS created and nothing was backed
// up into yet is such a directory (§1.3). Buckets have no directories; a
// PBS 4 bucket marks a namespace with a ".namespace" object instead (§8.1),
// which its ListFiles lists.
type DirLister interface {
	// ListDirs returns dir itself, when it exists, and every directory
	// below it (recursively, any order), datastore-relative, empty ones
	// included; never ".chunks" or what lies below it, never a symbolic
	// link. A missing dir yields none.
	ListDirs(ctx context.Context, dir string) ([]string, error)
}

// PartialLister is a store whose listings can leave part of it out while
// the rest answers (a Chain whose members' listings failed), and can say
// which part: a listing over it is then incomplete.
type PartialLister interface {
	// Unlisted returns the names of the parts (members) whose listing
	// failed so far, each once; none when every listing was complete.
	Unlisted() []string
}

// LeftOutReporter is a store made of member stores some of which were left
// out when it was opened (a Chain over several --store, some unreachable):
// an error that says no member had something joins the reasons of those
// left out, since they were never asked.
type LeftOutReporter interface {
	// LeftOut returns the errors of the members left out when the store
	// was opened, in the order given; none when every member was opened.
	LeftOut() []error
}

var (
	_ DirLister       = (*Local)(nil)
	_ DirLister       = (*Chain)(nil)
	_ PartialLister   = (*Chain)(nil)
	_ LeftOutReporter = (*Chain)(nil)
)
