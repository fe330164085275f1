package verify

import (
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
)

// ReportVersion is the version of the Report JSON schema.
const ReportVersion = 1

// DamagedChunk is one chunk that failed verification.
type DamagedChunk struct {
	Snapshot    string   `json:"snapshot,omitempty"` // only in the damaged-chunk list (Options.DamagedList)
	Archive     string   `json:"archive,omitempty"`  // only in the damaged-chunk list
	Digest      string   `json:"digest"`
	Offsets     []uint64 `json:"offsets"`                // byte offsets in the archive, the first MaxOffsets
	OffsetCount int      `json:"offset-count,omitempty"` // all offsets, when more than MaxOffsets
	Length      int      `json:"length"`                 // bytes
	Location    string   `json:"location"`               // chunk file or object
	Error       string   `json:"error"`
	Missing     bool     `json:"missing,omitempty"` // not in the store at all (else there but damaged)
	// BadCopy names the copy kept aside as damaged (a ".bad" file or
	// object) that holds the chunk intact when its ordinary copies are
	// missing or damaged: pbsdirect can restore the chunk from it, PBS
	// cannot (it never reads .bad copies), so it is still reported here.
	BadCopy string `json:"bad-copy,omitempty"`
}

// MaxOffsets is the most offsets a DamagedChunk lists (as ChunkError's
// message); OffsetCount gives the number of all of them.
const MaxOffsets = 8

// DamageSummary is the Error of an archive whose only failure is its n
// damaged chunks, e.g. "3 damaged chunk(s)".
func DamageSummary(n int) string { return fmt.Sprintf("%d damaged chunk(s)", n) }

// damageOnly reports whether a's Error only counts its damaged chunks:
// DamageError, or, in a report written before that field, an Error that is
// the DamageSummary of its DamagedCount.
func (a *ArchiveResult) damageOnly() bool {
	return a.DamageError || (a.DamagedCount > 0 && a.Error == DamageSummary(a.DamagedCount))
}

// DefaultMaxDamaged is the default number of damaged chunks a run reports
// in full; the others are counted (Options.MaxDamaged).
const DefaultMaxDamaged = 100

// ArchiveResult is the verification result of one archive.
type ArchiveResult struct {
	Archive string `json:"archive"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Size    uint64 `json:"size"`
	// The chunk counts of an archive count its own distinct chunks (the
	// zero chunk of a fixed index included): a chunk shared with other
	// archives counts in each, once as checked (read here) and in the
	// others as already verified, fresh or of other shards.
	ChunksChecked uint64 `json:"chunks-checked,omitempty"`           // read and checked here
	ChunksKnown   int    `json:"chunks-already-verified,omitempty"`  // checked for another archive of the run
	ChunksFresh   int    `json:"chunks-fresh,omitempty"`             // verified recently by an earlier run (Options.State): not read
	ChunksPresent int    `json:"chunks-confirmed-present,omitempty"` // of ChunksFresh: confirmed still in the store (stat, HEAD)
	ChunksOther   int    `json:"chunks-other-shards,omitempty"`      // left to the other shards (Options.Shard)
	CRCOnly       bool   `json:"crc-only,omitempty"`                 // encrypted, no key: structure and CRC checked, not content
	// NotVerified is set, in a merged report, on the archives of a
	// snapshot that only some shards saw (Report.NotVerified) where no
	// damage was found: the other shards' chunks were not checked, so the
	// archive is not OK, and not known damaged either.
	NotVerified  bool `json:"not-verified,omitempty"`
	DamagedCount int  `json:"damaged-count,omitempty"` // damaged chunks, listed or not
	// BadCopyCount counts those of them intact only in a .bad copy
	// (DamagedChunk.BadCopy), listed or not.
	BadCopyCount int `json:"bad-copy-only-count,omitempty"`
	// DamageError is set when Error only counts the damaged chunks
	// (DamageSummary of DamagedCount): a merge of shards' reports counts
	// them again instead of keeping one shard's count.
	DamageError bool `json:"error-is-damage,omitempty"`
	// Damaged lists the damaged chunks, by offset: those among the first
	// Options.MaxDamaged of the run.
	Damaged []DamagedChunk `json:"damaged-chunks,omitempty"`
}

// SnapshotResult is the verification result of one snapshot.
type SnapshotResult struct {
	Snapshot string `json:"snapshot"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
	Note     string `json:"note,omitempty"`
	Skipped  bool   `json:"skipped,omitempty"` // removed while running (pruned since listed): no damage, not verified
	// Status, when set, says the snapshot was not verified for want of
	// its key, no damage: snapshot.KeyMissing ("key-missing"),
	// KeyMismatch ("key-mismatch") or KeyUnopened ("key-error");
	// KeyFingerprint is the key its manifest names.
	Status         string `json:"status,omitempty"`
	KeyFingerprint string `json:"key-fingerprint,omitempty"`
	// KeyFile is the key file that could not be opened (Status
	// KeyUnopened), and PassphraseRefused says that its passphrase was
	// wrong: what to retry with.
	KeyFile           string `json:"key-file,omitempty"`
	PassphraseRefused bool   `json:"passphrase-refused,omitempty"`
	// KeyFiles are all the key files tried for the snapshot (Status
	// KeyUnopened), each with its own reason, in the order tried; KeyFile
	// and PassphraseRefused sum them up for older readers.
	KeyFiles []KeyFileResult `json:"key-files,omitempty"`
	Archives []ArchiveResult `json:"archives"`
}

// KeyFileResult is one key file tried for a snapshot and why it is not
// its key.
type KeyFileResult struct {
	File string `json:"file"`
	// Reason is snapshot.KeyReasonPassphrase ("passphrase-refused"),
	// KeyReasonClaim ("not-the-key-it-names"), KeyReasonOtherKey
	// ("another-key") or KeyReasonUnopened ("not-opened").
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"` // the file's own error
}

// KeyUnavailable reports whether r was not verified for want of its key
// (a Status), which is no damage.
func (r *SnapshotResult) KeyUnavailable() bool { return !r.OK && r.Status != "" }

// Report is the result of a verify run, or of shard runs merged (Merge).
type Report struct {
	Version    int      `json:"version"`              // ReportVersion
	Store      string   `json:"store,omitempty"`      // the store as given
	Namespaces []string `json:"namespaces,omitempty"` // looked at; "" is the root
	Shard      string   `json:"shard,omitempty"`      // "I/N" for a shard's report; "" for a whole run
	Host       string   `json:"host,omitempty"`       // hostnames of the runs, comma separated after a merge
	Started    string   `json:"started,omitempty"`    // RFC 3339, UTC
	Finished   string   `json:"finished,omitempty"`   // RFC 3339, UTC
	OK         bool     `json:"ok"`
	ExitCode   int      `json:"exit-code"` // the command's exit code: 0 ok, 1 damaged, 3 not checked for a cause outside the data
	Seconds    float64  `json:"seconds"`
	Bytes      uint64   `json:"bytes"` // archive bytes covered
	// ChunksChecked counts the distinct chunks read and checked (the sum of
	// the archives': each checks a shared chunk once per run, CRC-only
	// archives their own); DamagedChunks the damaged ones (per archive
	// that uses them); DamagedUnlisted those of them not listed in full
	// (Options.MaxDamaged).
	ChunksChecked uint64 `json:"chunks-checked"`
	// ChunksFresh counts the distinct chunks skipped as verified recently
	// by an earlier run (Options.State), ChunksPresent those of them
	// confirmed still in the store (the others are damaged: missing,
	// empty); a chunk several archives skip counts once, as in
	// ChunksChecked, so the archives' counts may add up to more.
	ChunksFresh     int `json:"chunks-fresh,omitempty"`
	ChunksPresent   int `json:"chunks-confirmed-present,omitempty"`
	DamagedChunks   int `json:"damaged-chunks"`
	DamagedUnlisted int `json:"damaged-chunks-unlisted,omitempty"`
	// BadCopyChunks counts the distinct chunks of DamagedChunks intact only
	// in a .bad copy: pbsdirect restores them, PBS cannot (a chunk several
	// archives use counts once here, in each ArchiveResult.BadCopyCount).
	BadCopyChunks int `json:"bad-copy-only-chunks,omitempty"`
	// WithoutKey counts the snapshots not verified for want of their key
	// (SnapshotResult.Status): not damaged, and not in Damaged().
	WithoutKey int              `json:"snapshots-without-key,omitempty"`
	Snapshots  []SnapshotResult `json:"snapshots"`
	Skipped    []string         `json:"skipped,omitempty"` // snapshots removed while running (pruned since listed)
	// NotVerified lists, in a merged report, the snapshots that only some
	// shards saw (a backup or prune between their runs): their chunks of
	// the other shards were not checked (Merge).
	NotVerified []string `json:"not-verified,omitempty"`
	// Stores says, with several stores (a chunkstore.Chain), how many
	// chunks each served and how many copies fell through; set by the
	// command.
	Stores []chunkstore.MemberStats `json:"stores,omitempty"`
	// RateLimit is what the rate limits were (--rate, --burst,
	// --rate-requests) and how long reads waited on them; absent without
	// limits; set by the command.
	RateLimit *ratelimit.Report `json:"rate-limit,omitempty"`
	// Requests counts, for a bucket store (a chain: its members summed),
	// what the request policy did and the connections opened and reused;
	// set by the command.
	Requests *bucket.Stats `json:"bucket-requests,omitempty"`
	// StoresLeftOut names the stores of a chain that could not be read
	// (opened or listed) during the run: what only they hold was not
	// verified, so the run is not OK (LeaveOut); set by the command.
	StoresLeftOut []string `json:"stores-left-out,omitempty"`
	// Note says why a run checked nothing although that is no failure: a
	// namespace that exists and holds no snapshot (Selection.Note).
	Note string `json:"note,omitempty"`
	// Advice, for a run that found damaged or missing chunks, says how to
	// keep the next backup from reusing them (BackupAdvice); set by the
	// command.
	Advice string `json:"advice,omitempty"`
}

// LeaveOut records stores that could not be read during the run; any at
// all makes the run not OK (Incomplete says why).
func (rep *Report) LeaveOut(stores ...string) {
	if len(stores) == 0 {
		return
	}
	rep.StoresLeftOut = append(rep.StoresLeftOut, stores...)
	rep.OK = false
}

// Incomplete returns, for a run that left stores out (StoresLeftOut), an
// error wrapping chunkstore.ErrUnavailable (a cause outside the data: exit
// 3) that names them; nil otherwise. Store names are as given, not escaped.
func (rep *Report) Incomplete() error {
	if len(rep.StoresLeftOut) == 0 {
		return nil
	}
	return fmt.Errorf("%w: not everything could be verified: --store %s could not be read (what only it holds was not verified)",
		chunkstore.ErrUnavailable, strings.Join(rep.StoresLeftOut, ", --store "))
}

// Add appends r to the report and updates its counts and OK; a skipped
// snapshot (removed while running) is only listed in Skipped. ChunksFresh
// and ChunksPresent add up the archives' counts, in which a shared chunk
// counts in each: Verifier.Run and Merge set them to distinct chunks.
func (rep *Report) Add(r SnapshotResult) {
	if r.Skipped {
		rep.Skipped = append(rep.Skipped, r.Snapshot)
		return
	}
	rep.OK = rep.OK && r.OK
	if r.KeyUnavailable() {
		rep.WithoutKey++
	}
	for _, a := range r.Archives {
		rep.Bytes += a.Size
		rep.ChunksChecked += a.ChunksChecked
		rep.ChunksFresh += a.ChunksFresh
		rep.ChunksPresent += a.ChunksPresent
		rep.DamagedChunks += a.DamagedCount
		rep.BadCopyChunks += a.BadCopyCount
		rep.DamagedUnlisted += a.DamagedCount - len(a.Damaged)
	}
	rep.Snapshots = append(rep.Snapshots, r)
}

// Failed returns the number of snapshots that are not OK.
func (rep *Report) Failed() int {
	n := 0
	for _, sr := range rep.Snapshots {
		if !sr.OK {
			n++
		}
	}
	return n
}

// Damaged returns the number of snapshots that are not OK for a cause
// other than a key not given (Failed less WithoutKey): damaged, or not
// verifiable.
func (rep *Report) Damaged() int {
	n := 0
	for _, sr := range rep.Snapshots {
		if !sr.OK && !sr.KeyUnavailable() {
			n++
		}
	}
	return n
}
