package restore

import (
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"
)

// Summary is the final report of an image restore (the restore command's
// JSON result and text summary, a drill's "restore"), built from a
// Result by Result.Summary.
type Summary struct {
	Snapshot      string  `json:"snapshot"`
	Archive       string  `json:"archive"`
	Target        string  `json:"target"`
	Size          uint64  `json:"size"`           // image bytes
	DataBytes     uint64  `json:"data-bytes"`     // non-zero bytes written
	ZeroBytes     uint64  `json:"zero-bytes"`     // bytes of zero chunks, never fetched
	FetchedBytes  uint64  `json:"fetched-bytes"`  // encoded bytes read from the store
	ChunksFetched uint64  `json:"chunks-fetched"` // unique chunks fetched and verified
	ZeroChunks    uint64  `json:"zero-chunks"`    // zero-chunk positions skipped
	DedupHits     uint64  `json:"dedup-hits"`     // positions served from an already fetched chunk
	Seconds       float64 `json:"seconds"`        // wall time of the whole restore
	MiBps         float64 `json:"mib-per-second"` // image bytes / seconds; 0 (as DataMiBps) when nothing was fetched or written
	DataMiBps     float64 `json:"data-mib-per-second"`
	Direct        bool    `json:"o-direct"`
	Encrypted     bool    `json:"encrypted"`
	Jobs          int     `json:"jobs"`
	Writers       int     `json:"writers"`
	Fetchers      int     `json:"fetchers"`
	Layout        string  `json:"bucket-layout,omitempty"` // a bucket store's layout ("pbs4-s3", "plain"); "" for a directory
	Retries       int64   `json:"retries"`
	// Requests counts what the bucket request policy did: throttled
	// answers, stalled transfers, and the changes of the GETs in flight.
	Requests   *bucket.Stats `json:"bucket-requests,omitempty"`
	ZeroRanges string        `json:"zero-ranges"` // holes, punched, zeroed or skipped (--assume-zeroed)
	// ResumedChunks are the chunks an interrupted restore had made durable
	// (its journal), not fetched again by this --resume.
	ResumedChunks int `json:"resumed-chunks,omitempty"`
	// Stores says, with several --store, how many chunks and bytes came
	// from each and how many copies fell through (missing, damaged).
	Stores []chunkstore.MemberStats `json:"stores,omitempty"`
	// StoresLeftOut names the stores of a chain (several --store) that
	// could not be read (left out when opened or listed), as verify's
	// report does: the chunks only they hold were not looked for there.
	// The command sets it; Summary leaves it empty.
	StoresLeftOut []string `json:"stores-left-out,omitempty"`
	// DamagedRanges are the image's byte ranges written as zeros because
	// their chunk was missing or damaged in every store (--on-missing,
	// --on-corrupt zero), adjacent ranges merged; DamagedChunks counts
	// those chunks. The image is then "restored with damage" (exit 1).
	DamagedRanges []Range `json:"damaged-ranges,omitempty"`
	DamagedChunks int     `json:"damaged-chunks,omitempty"`
	// Salvaged lists the chunks missing or damaged in every store that
	// were recovered from a copy kept aside as damaged (a ".bad" copy that
	// passed the chunk's check; PBS itself never reads one), the first
	// MaxSalvagedListed; SalvagedChunks counts them all.
	Salvaged       []SalvagedChunk `json:"recovered-from-bad-copies,omitempty"`
	SalvagedChunks int             `json:"recovered-from-bad-copies-count,omitempty"`
	ExitCode       int             `json:"exit-code"` // the process exit code (0: restored, verified and synced)
	// RateLimit is what the rate limits were (--rate, --burst,
	// --rate-requests) and how long reads waited on them; absent without
	// limits.
	RateLimit *ratelimit.Report `json:"rate-limit,omitempty"`
	// Delta is what a differential restore (--base, --in-place) found
	// and left out.
	Delta *DeltaResult `json:"delta,omitempty"`
}

// Summary returns the report of the restore res that took elapsed (the
// caller's clock: it may start before the store was opened and leave out
// the time a key took to open), with the counts of the store it read
// (src.Store(): its bucket layout, retries, request statistics and, for a
// chain, each member's). A target found complete (Complete) reports its
// size and resumed chunks only. ExitCode is left to the caller.
func (res *Result) Summary(elapsed time.Duration) Summary {
	sum := Summary{Snapshot: res.Snapshot.String(), Archive: res.Archive, Target: res.TargetName, Size: res.Plan.Size, ResumedChunks: res.Resumed}
	if res.Complete != "" {
		return sum
	}
	plan, stats, o, store := res.Plan, res.Stats, res.Options, res.store
	sum.DataBytes, sum.ZeroBytes, sum.FetchedBytes = stats.DataBytes.Load(), stats.ZeroBytes.Load(), stats.FetchedBytes.Load()
	sum.ChunksFetched, sum.ZeroChunks, sum.DedupHits = stats.Fetched.Load(), plan.ZeroBytes/max(plan.ChunkSize, 1), stats.DedupHits.Load()
	sum.Seconds = elapsed.Seconds()
	if sum.ChunksFetched > 0 || sum.DataBytes > 0 {
		// A resume with every chunk already on the target did no work
		// to measure: no rate.
		sum.MiBps, sum.DataMiBps = MiBps(plan.Size, elapsed), MiBps(sum.DataBytes, elapsed)
	}
	sum.Direct, sum.Encrypted, sum.Jobs, sum.Writers, sum.Fetchers = res.Direct, o.Encrypted, o.Jobs, o.Writers, o.Fetchers
	sum.Retries, sum.ZeroRanges = backends.RetriesOf(store), res.ZeroRanges
	if l, ok := backends.LayoutOf(store); ok {
		sum.Layout = l.String()
		q := backends.PolicyStatsOf(store)
		sum.Requests = &q
	}
	if c, ok := store.(chunkstore.FallThrough); ok {
		sum.Stores = c.Stats()
	}
	sum.RateLimit = o.RateLimit.Report()
	sum.Salvaged, sum.SalvagedChunks = stats.Salvaged.Chunks(), stats.Salvaged.Count()
	sum.Delta = res.Delta
	if res.Damage != nil {
		sum.DamagedRanges, sum.DamagedChunks = res.Damage.Ranges(), len(res.Damage.Chunks)
	}
	return sum
}

// DamagedBytes returns the bytes of DamagedRanges: the image's bytes
// written as zeros.
func (s Summary) DamagedBytes() uint64 {
	var n uint64
	for _, r := range s.DamagedRanges {
		n += r.Length
	}
	return n
}
