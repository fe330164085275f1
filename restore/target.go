package restore

// Target receives restored bytes at absolute offsets. WriteAt may be called
// concurrently and out of order. It is all the pipeline needs; what some
// targets can do beyond it are the capabilities Allocator, DirectWriter,
// Committer, ReadBacker, Identified, ZeroReporter, Remover and Discarder,
// declared below. Implementations: filetarget.Target (a regular file or a
// block device, in its own package below this interface) and Discard
// (verify).
type Target interface {
	// WriteAt writes p at byte offset off. p is Alignment-aligned in memory.
	WriteAt(p []byte, off int64) error
	// Zero makes [off, off+length) read as zeros, unless the target is known
	// to read as zeros already (a new sparse file, --assume-zeroed).
	Zero(off, length int64) error
	// Sync makes every written byte durable (fdatasync).
	Sync() error
	// Close releases the target. After a failed restore, abort = true removes
	// a file the target created itself.
	Close(abort bool) error
}

// Allocator is a Target that reserves storage for [off, off+length)
// before data is written there, where the file system writes reserved
// space in place (ext4, XFS): a full file system then fails the restore
// before any chunk is fetched, and O_DIRECT writes into the range are
// overwrites, which run concurrently instead of one at a time under the
// inode lock. Run reserves every data range of the plan on such a target.
type Allocator interface {
	Allocate(off, length int64) error
}

// DirectWriter is a Target that may write with O_DIRECT; Direct reports
// whether it does (for the summary).
type DirectWriter interface {
	Direct() bool
}

// Committer is a Target whose writes become the visible result only when
// committed: Commit makes a completed restore durable and puts it in place
// (a new file renamed from its partial output); KeepPartial makes Close
// keep an uncommitted partial output for a resume, and PartialPath names
// it ("" for a target written in place); Partial reports whether an
// existing target was changed (after a failure it then holds a partial
// image).
type Committer interface {
	Commit() error
	KeepPartial()
	PartialPath() string
	Partial() bool
}

// ZeroReporter is a Target that says what its Zero did to the image's
// zero ranges, for the summary: "holes" (a new sparse file), "punched"
// (an existing file), "zeroed" (a block device) or "skipped" (assumed
// zeroed).
type ZeroReporter interface {
	ZeroHandling() string
}

// Remover is a Target that may have created what it writes (a new file):
// Created reports whether it did, and Remove removes it again after a
// committed restore (drill --remove), without closing the target.
type Remover interface {
	Created() bool
	Remove() error
}

// ReadBacker is a Target whose written bytes can be read again while it
// is open: by a read-back (ReadBackTarget) and by a resume's check of the
// chunks its journal records as durable (CheckDurable). A target kind
// without it is restored, but neither read back nor resumed.
type ReadBacker interface {
	// ReadBack opens a reader of the very bytes written (not of whatever
	// is at the target's name now). uncached asks that the storage answer,
	// not a cache of what was written (O_DIRECT, or the cache dropped).
	// It fails once the target is closed.
	ReadBack(uncached bool) (BackReader, error)
}

// BackReader reads back what a target holds (ReadBacker.ReadBack).
type BackReader interface {
	// ReadAt reads exactly len(p) bytes at byte offset off, or returns an
	// error (a short read is io.ErrUnexpectedEOF). For a reader opened
	// uncached, p's memory must be Alignment-aligned and its capacity
	// reach the next Alignment multiple of len(p): the reader may read that
	// far (an O_DIRECT read); the alignment of off it handles itself.
	// ReadAt may be called concurrently.
	ReadAt(p []byte, off int64) (int, error)
	// Data returns, in order, the parts [start, end) of [off, off+length)
	// that may hold data: parts known to read as zeros without being
	// stored (the holes of a sparse file) are left out. A reader that
	// cannot tell returns the whole range.
	Data(off, length uint64) [][2]uint64
	// Close releases the reader, not the target.
	Close() error
}

// Identified is a Target that can name what it left, for the record of a
// completed restore (Journal.Complete): a later resume compares it with
// the target then (Journaled.Same).
type Identified interface {
	// Identity returns the identity of the open target (Finished left
	// zero).
	Identity() (Completion, error)
}

// Discarder is a Target that keeps nothing written to it (Discard): the
// only target a CRC-only check may run into.
type Discarder interface {
	Discards() bool
}

// Discard is the target of verify: it accepts and drops everything.
type Discard struct{}

// WriteAt drops p.
func (Discard) WriteAt(p []byte, off int64) error { return nil }

// Zero does nothing.
func (Discard) Zero(off, length int64) error { return nil }

// Sync does nothing.
func (Discard) Sync() error { return nil }

// Close does nothing.
func (Discard) Close(bool) error { return nil }

// Discards reports true: nothing written is kept.
func (Discard) Discards() bool { return true }

var _ Discarder = Discard{}
