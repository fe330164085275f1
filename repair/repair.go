package repair

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// What was wrong with the primary's copy of a chunk (Item.Problem).
const (
	ProblemMissing = "missing" // not there, or 0 bytes
	ProblemDamaged = "damaged" // there, but failed its check
)

// What was done about a chunk (Item.Action).
const (
	ActionCopied    = "copied"         // a good copy was written into the primary
	ActionWouldCopy = "would copy"     // dry run: a good copy would be written
	ActionNoCopy    = "no good copy"   // no store had a copy that passed its check
	ActionGoodNow   = "good meanwhile" // good when checked again before writing (written by another writer): left as it is
	ActionFailed    = "failed"         // a store could not be read, or the primary written (see Item.Error, Item.Tried, Item.WriteError)
)

// Item is one chunk or snapshot file of the scope that the primary lacked
// or held damaged, and what was done about it.
type Item struct {
	Kind    string `json:"kind"`             // KindChunk, KindIndex, KindBlob, KindManifest or KindOwner
	Digest  string `json:"digest,omitempty"` // a chunk's
	File    string `json:"file,omitempty"`   // a snapshot file's datastore-relative path
	Length  int    `json:"length,omitempty"` // a chunk's plaintext bytes
	Problem string `json:"problem"`          // ProblemMissing or ProblemDamaged ("" when the primary could not be read)
	Error   string `json:"error"`            // what the primary's copy failed with (store-controlled text)
	// Source is the store the good copy came from; for a chunk's copy
	// kept aside, "<store> (.bad copy <name>)"; for a manifest not
	// replaced (ActionNotReplaced), the store where a good copy is.
	Source string `json:"source,omitempty"`
	Action string `json:"action"` // one of the Action constants
	// Aside is where the primary's damaged copy was kept
	// ("<digest>.N.bad" file or object), "" when none was moved.
	Aside string `json:"aside,omitempty"`
	// Tried says why the other stores' copies were not used, one entry
	// per store tried before Source (or all of them for ActionNoCopy).
	Tried []string `json:"tried,omitempty"`
	// WriteError is why writing into the primary failed, or why no copy
	// could be had (ActionFailed).
	WriteError string `json:"write-error,omitempty"`
	// CRCOnly: an encrypted chunk checked without its key, by structure
	// and CRC only (Chunk.CRCOnly): a forged copy (another chunk's valid
	// bytes under this digest's name) cannot be excluded.
	CRCOnly bool `json:"crc-only,omitempty"`

	data []byte           // a snapshot file's good copy, to be written
	src  chunkstore.Store // the store data came from
}

// Options configure a Repairer.
type Options struct {
	// DryRun checks every chunk and finds a good copy, but writes nothing.
	DryRun bool
	// Jobs is the number of chunks checked at once; 0 means DefaultJobs.
	Jobs int
	// MaxListed is the number of Items a Report lists; the rest are
	// counted (Report.Unlisted). 0 means DefaultMaxListed.
	MaxListed int
	// Each, when set, is called with every Item as it is decided, from one
	// goroutine at a time.
	Each func(Item)
}

// DefaultJobs is the default number of chunks checked at once.
const DefaultJobs = 8

// DefaultMaxListed is the default number of items a Report lists.
const DefaultMaxListed = 10000

// Repairer copies good chunks from mirrors into a primary store.
type Repairer struct {
	primary chunkstore.WriteStore
	from    []chunkstore.Store
	opts    Options

	mu      sync.Mutex
	stopErr error // the first write into the primary that failed (Stopped)
}

// Stopped returns the first write into the primary that failed (a chunk
// or a file; not a chunk refused for want of a free .bad name,
// chunkstore.ErrNoFreeBadName), after which Run and Files stop: a store
// that refuses one write (read-only, denied, full) is not tried with every
// chunk. Nil when none failed.
func (r *Repairer) Stopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopErr
}

// writeFailed records err, a failed write into the primary, as the cause
// to stop (Stopped), unless it is ctx's end or a chunk's own state.
func (r *Repairer) writeFailed(ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, chunkstore.ErrNoFreeBadName) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopErr == nil {
		r.stopErr = err
	}
}

// New returns a Repairer writing into primary from the stores from, in
// order of preference.
func New(primary chunkstore.WriteStore, from []chunkstore.Store, opts Options) *Repairer {
	if opts.Jobs <= 0 {
		opts.Jobs = DefaultJobs
	}
	if opts.MaxListed <= 0 {
		opts.MaxListed = DefaultMaxListed
	}
	return &Repairer{primary: primary, from: from, opts: opts}
}

// Counts are a repair's totals, in distinct chunks.
type Counts struct {
	Chunks   int `json:"chunks"`     // checked in the primary
	Good     int `json:"good"`       // good in the primary
	Repaired int `json:"repaired"`   // copied into the primary (ActionCopied)
	Would    int `json:"would-copy"` // dry run: would be copied
	GoodNow  int `json:"good-meanwhile"`
	NoCopy   int `json:"no-good-copy"` // in no store in good shape
	Failed   int `json:"failed"`       // a store could not be read, or the primary written
	// CRCOnly counts the chunks needing repair that were checked by
	// structure and CRC only (Item.CRCOnly).
	CRCOnly    int `json:"crc-only,omitempty"`
	Unlisted   int `json:"unlisted,omitempty"`
	Unfinished int `json:"unfinished,omitempty"` // not checked: the run was stopped
}

// Run checks each chunk of chunks in the primary and repairs those that
// are missing or damaged, Options.Jobs at a time. Once a write into the
// primary failed (Stopped), the chunks not yet checked are left
// (Counts.Unfinished). It returns the items
// (the first MaxListed, sorted by digest) and the counts; when ctx ends it
// returns what it has and ctx's error.
func (r *Repairer) Run(ctx context.Context, chunks []Chunk) ([]Item, Counts, error) {
	var (
		mu    sync.Mutex
		items []Item
		n     Counts
		wg    sync.WaitGroup
	)
	work := make(chan *Chunk)
	var decErr error
	for range r.opts.Jobs {
		dec, err := chunkstore.NewDecoder()
		if err != nil {
			decErr = err
			break
		}
		wg.Go(func() {
			defer dec.Close()
			for c := range work {
				if r.Stopped() != nil {
					mu.Lock()
					n.Unfinished++
					mu.Unlock()
					continue
				}
				it, good := r.chunk(ctx, dec, c)
				mu.Lock()
				n.Chunks++
				switch {
				case ctx.Err() != nil && !good && it.Action == "":
					n.Chunks--
					n.Unfinished++
					mu.Unlock()
					continue
				case good:
					n.Good++
					mu.Unlock()
					continue
				}
				if it.CRCOnly {
					n.CRCOnly++
				}
				switch it.Action {
				case ActionCopied:
					n.Repaired++
				case ActionWouldCopy:
					n.Would++
				case ActionGoodNow:
					n.GoodNow++
				case ActionNoCopy:
					n.NoCopy++
				default:
					n.Failed++
				}
				if len(items) < r.opts.MaxListed {
					items = append(items, it)
				} else {
					n.Unlisted++
				}
				if r.opts.Each != nil {
					r.opts.Each(it)
				}
				mu.Unlock()
			}
		})
	}
	if decErr == nil {
	feed:
		for i := range chunks {
			if r.Stopped() != nil {
				mu.Lock()
				n.Unfinished += len(chunks) - i
				mu.Unlock()
				break feed
			}
			select {
			case work <- &chunks[i]:
			case <-ctx.Done():
				n.Unfinished += len(chunks) - i
				break feed
			}
		}
	}
	close(work)
	wg.Wait()
	slices.SortFunc(items, func(a, b Item) int {
		if a.Digest < b.Digest {
			return -1
		}
		if a.Digest > b.Digest {
			return 1
		}
		return 0
	})
	if decErr != nil {
		return items, n, decErr
	}
	return items, n, ctx.Err()
}

// chunk checks c in the primary and repairs it; good reports a chunk that
// was good in the primary (no item).
func (r *Repairer) chunk(ctx context.Context, dec *chunkstore.Decoder, c *Chunk) (it Item, good bool) {
	it = Item{Kind: KindChunk, Digest: c.Digest.String(), Length: c.Length, CRCOnly: c.CRCOnly}
	_, perr := check(ctx, dec, r.primary, c)
	if perr == nil {
		return it, true
	}
	if ctx.Err() != nil {
		return it, false
	}
	it.Error = perr.Error()
	if problem(perr) == "" {
		// Unreadable for a cause outside the data: proves nothing.
		it.Action = ActionFailed
		return it, false
	}
	it.Problem = problem(perr)
	// A good copy, from the first store that has one.
	var blob []byte
	unread := false // a store could not be read: no copy is not proven
	for _, s := range r.from {
		b, err := check(ctx, dec, s, c)
		if ctx.Err() != nil {
			return Item{}, false
		}
		if err == nil {
			blob, it.Source = b, s.String()
			break
		}
		unread = unread || problem(err) == ""
		it.Tried = append(it.Tried, s.String()+": "+err.Error())
	}
	if blob == nil {
		var src string
		blob, src = r.salvage(ctx, dec, c, &it, &unread)
		if ctx.Err() != nil {
			return Item{}, false
		}
		if blob != nil {
			it.Source = src
		}
	}
	switch {
	case blob == nil && unread:
		it.Action, it.WriteError = ActionFailed, "no good copy in the stores that could be read, and a store could not be read (see tried)"
		return it, false
	case blob == nil:
		it.Action = ActionNoCopy
		return it, false
	case r.opts.DryRun:
		it.Action = ActionWouldCopy
		return it, false
	}
	r.write(ctx, dec, c, blob, &it)
	return it, false
}

// errNoBadCopy stands, for chunkstore.Salvage, for the chunk's failure
// under its own name.
var errNoBadCopy = errors.New("no .bad copy")

// salvage looks for a good copy of c among the copies kept aside as
// damaged ("<digest>.N.bad", chunkstore.BadCopies): the primary's own
// first, then each --from store's, each checked as a chunk read under its
// name is. It returns the copy and its source ("<store> (.bad copy
// <name>)"), or nil, adding to it.Tried what the copies that failed said
// and setting unread when a store's copies could not be looked for.
func (r *Repairer) salvage(ctx context.Context, dec *chunkstore.Decoder, c *Chunk, it *Item, unread *bool) ([]byte, string) {
	for _, s := range append([]chunkstore.Store{r.primary}, r.from...) {
		if _, ok := s.(chunkstore.BadCopies); !ok {
			continue
		}
		raw, loc, err := chunkstore.Salvage(ctx, s, c.Digest, errNoBadCopy, nil, chunkstore.ChunkLimit(c.Length), func(raw []byte) error {
			return checkRaw(dec, raw, c)
		})
		switch {
		case ctx.Err() != nil:
			return nil, ""
		case err == nil:
			return raw, fmt.Sprintf("%s (.bad copy %s)", s, path.Base(loc))
		case err == errNoBadCopy:
			continue
		case chunkstore.Outside(err):
			*unread = true
		}
		it.Tried = append(it.Tried, s.String()+" .bad copies: "+strings.TrimPrefix(err.Error(), errNoBadCopy.Error()+"; "))
	}
	return nil, ""
}

// write puts blob, a good copy of c, into the primary: checked again
// first, so that a chunk another writer stored meanwhile is left as it
// is; a missing one written as a new chunk (never over an existing one), a
// damaged one replaced, its copy kept aside (chunkstore.ChunkReplacer).
// The chunk is read back and checked after.
func (r *Repairer) write(ctx context.Context, dec *chunkstore.Decoder, c *Chunk, blob []byte, it *Item) {
	fail := func(err error) {
		it.Action, it.WriteError = ActionFailed, err.Error()
	}
	old, err := check(ctx, dec, r.primary, c)
	if problem(err) == ProblemMissing {
		existed, werr := r.primary.WriteChunk(ctx, c.Digest, blob)
		if werr != nil {
			r.writeFailed(ctx, werr)
			fail(werr)
			return
		}
		if existed {
			// Written meanwhile by another writer: good, or damaged.
			old, err = check(ctx, dec, r.primary, c)
		}
	}
	switch {
	case err == nil:
		it.Action = ActionGoodNow
		return
	case problem(err) == "":
		fail(err)
		return
	case problem(err) == ProblemDamaged:
		rp, ok := r.primary.(chunkstore.ChunkReplacer)
		if !ok {
			fail(fmt.Errorf("chunk %s: %s cannot replace a damaged chunk", c.Digest, r.primary))
			return
		}
		aside, rerr := rp.ReplaceChunk(ctx, c.Digest, old, blob)
		it.Aside = aside
		if rerr != nil {
			r.writeFailed(ctx, rerr)
			fail(rerr)
			return
		}
	}
	if _, err := check(ctx, dec, r.primary, c); err != nil {
		fail(fmt.Errorf("chunk %s: written to %s, but reading it back failed: %w", c.Digest, r.primary.ChunkLocation(c.Digest), err))
		return
	}
	it.Action = ActionCopied
}

// check reads c from s and checks it as verify does: crypt mode, CRC,
// decryption, length and digest (CRC only for CRCOnly). It returns the
// stored bytes (also when damaged: a copy to keep aside; nil when
// missing) and why the copy is not good.
func check(ctx context.Context, dec *chunkstore.Decoder, s chunkstore.Store, c *Chunk) ([]byte, error) {
	raw, err := s.ReadChunk(ctx, c.Digest, nil, chunkstore.ChunkLimit(c.Length))
	if err != nil {
		return nil, err
	}
	if err := checkRaw(dec, raw, c); err != nil {
		return raw, fmt.Errorf("chunk %s: %s: %w", c.Digest, s.ChunkLocation(c.Digest), err)
	}
	return raw, nil
}

// checkRaw checks raw, a stored copy of c, as verify does: crypt mode,
// CRC, decryption, length and digest (crypt mode and CRC only for
// CRCOnly).
func checkRaw(dec *chunkstore.Decoder, raw []byte, c *Chunk) error {
	if c.CRCOnly {
		if _, err := chunkstore.CheckCryptMode(raw, c.Encrypted); err != nil {
			return err
		}
		return chunkstore.CheckCRC(raw)
	}
	// DecodeChunk may overwrite blob's spare capacity: hand it a copy's
	// worth of room only.
	_, err := dec.DecodeChunk(nil, raw[:len(raw):len(raw)], c.Digest, c.Length, c.Encrypted, c.Key)
	return err
}

// problem classifies why a copy is not good: ProblemMissing,
// ProblemDamaged, or "" for a cause outside the data.
func problem(err error) string {
	switch {
	case errors.Is(err, chunkstore.ErrEmpty), chunkstore.Missing(err):
		return ProblemMissing
	case chunkstore.Damaged(err), errors.Is(err, chunkstore.ErrTooLarge):
		return ProblemDamaged
	}
	return ""
}
