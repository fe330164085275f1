package backup

import (
	"errors"
	"strconv"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Summary is the final report of a backup, as the backup command prints it
// (JSON field names are part of its output). The counts are those of
// Stats: chunks = zero-chunks + chunks-uploaded + chunks-existing +
// dedup-hits; chunks-uploaded + chunks-existing (chunks with data) is what
// restore reports as chunks-fetched and verify as chunks-checked, and
// zero-chunks what restore reports as zero-chunks. The zero chunk itself is
// zero-chunk-uploaded or zero-chunk-existing.
type Summary struct {
	Snapshot      string   `json:"snapshot"`
	Archives      []string `json:"archives"`
	ImageBytes    uint64   `json:"image-bytes"`
	ZeroBytes     uint64   `json:"zero-bytes"`
	Chunks        uint64   `json:"chunks"`
	ZeroChunks    uint64   `json:"zero-chunks"`
	Uploaded      uint64   `json:"chunks-uploaded"`
	UploadedBytes uint64   `json:"uploaded-bytes"` // the zero chunk's included
	Existing      uint64   `json:"chunks-existing"`
	DedupHits     uint64   `json:"dedup-hits"`
	Replaced      uint64   `json:"chunks-replaced,omitempty"` // found damaged in the store and written again (in chunks-uploaded)
	// Of chunks-existing: those the previous snapshot (previous-snapshot,
	// "" when none was used) lists, counted on without compressing or
	// asking the store, and those an existence check found (read back and
	// checked, never compressed).
	KnownPrevious uint64  `json:"chunks-known-previous"`
	FoundPresent  uint64  `json:"chunks-found-present"`
	Previous      string  `json:"previous-snapshot"`
	ZeroUploaded  bool    `json:"zero-chunk-uploaded"`
	ZeroExisting  bool    `json:"zero-chunk-existing"`
	Seconds       float64 `json:"seconds"`
	MiBps         float64 `json:"mib-per-second"`
	Encrypted     bool    `json:"encrypted"`
	CryptMode     string  `json:"crypt-mode"`
	Fingerprint   string  `json:"key-fingerprint,omitempty"`
	// Of the pxar archives' entries: those stored with xattrs, ACLs and
	// file capabilities, and those whose ones could not be read (stored
	// without them; the backup warns of each).
	XattrEntries int `json:"entries-with-xattrs,omitempty"`
	ACLEntries   int `json:"entries-with-acls,omitempty"`
	FCapsEntries int `json:"entries-with-fcaps,omitempty"`
	MetaUnread   int `json:"metadata-unread,omitempty"`
	// OtherFS counts the directories on other file systems stored empty
	// (Options.IncludeDev); LeftOut the paths left out (Options.LeaveOut).
	OtherFS int `json:"other-file-systems-not-read,omitempty"`
	LeftOut int `json:"left-out,omitempty"`
}

// Summarize returns the summary of the backup that returned res after
// counting into stats, having taken elapsed; key and signOnly are the
// Options' Key and SignOnly. MiBps is left to the caller, who measures
// rates for every command alike (restore.MiBps).
func Summarize(res *Result, stats *Stats, elapsed time.Duration, key *crypto.Config, signOnly bool) Summary {
	sum := Summary{
		Snapshot: res.Snapshot.String(), ImageBytes: stats.ImageBytes.Load(), ZeroBytes: stats.ZeroBytes.Load(),
		Chunks: stats.Chunks.Load(), Uploaded: stats.Uploaded.Load(), UploadedBytes: stats.UploadedBytes.Load(),
		Existing: stats.Existing.Load(), DedupHits: stats.DedupHits.Load(), Replaced: stats.Replaced.Load(), Seconds: elapsed.Seconds(),
		ZeroChunks: stats.ZeroChunks.Load(), ZeroUploaded: stats.ZeroUploaded.Load() > 0, ZeroExisting: stats.ZeroExisting.Load() > 0,
		Encrypted: key != nil && !signOnly, CryptMode: string(res.Manifest.Files[0].CryptMode),
		KnownPrevious: stats.KnownPrevious.Load(), FoundPresent: stats.FoundPresent.Load(), Previous: res.Previous,
	}
	sum.XattrEntries, sum.ACLEntries, sum.FCapsEntries, sum.MetaUnread = res.Meta.Xattrs, res.Meta.ACLs, res.Meta.FCaps, res.Meta.Unread
	sum.OtherFS, sum.LeftOut = res.Meta.OtherFS, len(res.Meta.Skipped)
	for _, f := range res.Manifest.Files {
		sum.Archives = append(sum.Archives, f.Filename)
	}
	if key != nil {
		sum.Fingerprint = key.Fingerprint().String()
	}
	return sum
}

// ParseTime parses a snapshot time given as epoch seconds or RFC 3339
// (2026-11-29T10:00:00Z, or with an offset) into epoch seconds. Errors
// say what is wanted; a time not after 1970 is refused.
func ParseTime(s string) (int64, error) {
	var t int64
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		t = n
	} else if p, err := time.Parse(time.RFC3339, s); err == nil {
		t = p.Unix()
	} else {
		return 0, errors.New("want RFC 3339 (2026-11-29T10:00:00Z or with an offset) or epoch seconds")
	}
	if t <= 0 {
		return 0, errors.New("must be after 1970-01-01T00:00:00Z")
	}
	return t, nil
}
