// Package discover finds PBS datastores below a directory or a bucket
// prefix, for 'pbsdirect datastores' and for the "did you mean" of a
// --store that names no datastore (Near). A directory datastore is a
// directory with a ".chunks" directory (§1); in a bucket, a prefix with
// objects below "<prefix>/.cnt/" or an ".in-use" marker is a PBS 4 S3
// datastore (§8.1) and one with objects below "<prefix>/.chunks/" a bucket
// copy of a directory datastore (the layouts bucket.DetectLayout tells).
//
// Walks are bounded: they go at most Options.MaxDepth levels below where
// they start, make at most Options.MaxRequests listings (one delimiter
// listing of a bucket level, one read of a directory), never descend into
// a datastore found (nor into .chunks), and never follow a symbolic link.
// What a bound, a failed listing or a link not followed left out is said in
// Result.LeftOut.
package discover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
)

// Default bounds of a walk (Options).
const (
	// DefaultMaxDepth is how many levels below the start a walk goes.
	DefaultMaxDepth = 4
	// DefaultMaxRequests is how many listings a walk makes at most.
	DefaultMaxRequests = 500
)

// LayoutDirectory is the Layout of a directory datastore; bucket
// datastores have bucket.Layout's names ("pbs4-s3", "plain").
const LayoutDirectory = "directory"

// Datastore is one datastore found.
type Datastore struct {
	// Location is what --store takes to open it: a directory path, or
	// "<scheme>://bucket[/prefix]".
	Location string `json:"location"`
	// Layout is LayoutDirectory, "pbs4-s3" or "plain" (a bucket copy of a
	// directory datastore).
	Layout string `json:"layout"`
}

// Options bounds a walk. The zero value takes the defaults.
type Options struct {
	// MaxDepth is how many levels below the start are walked (0:
	// DefaultMaxDepth; the start itself is level 0).
	MaxDepth int
	// MaxRequests is the most listings made (0: DefaultMaxRequests).
	MaxRequests int
	// closeTo, when set, orders the start's children closest to it
	// first (byCloseness), so that a bounded walk lists them first.
	closeTo string
}

func (o Options) bounds() (depth, requests int) {
	depth, requests = o.MaxDepth, o.MaxRequests
	if depth <= 0 {
		depth = DefaultMaxDepth
	}
	if requests <= 0 {
		requests = DefaultMaxRequests
	}
	return depth, requests
}

// Result is what a walk found.
type Result struct {
	// Datastores are the datastores found, sorted by Location.
	Datastores []Datastore
	// Requests is the number of listings made.
	Requests int
	// LeftOut says, one line each, what the walk did not look at: levels
	// beyond MaxDepth, what the request bound cut off, listings that
	// failed below the start. Empty when the walk was complete.
	LeftOut []string
}

// Find walks the tree below location for datastores: a bucket prefix
// ("s3://bucket[/prefix]", "gs://…", opened with opts as backends.Open
// does) or a local directory. An error is returned only when the start
// itself cannot be listed (a missing bucket or directory wraps
// chunkstore.ErrNotFound, unreachable or refused ones their
// chunkstore error); what fails below it is told in Result.LeftOut.
func Find(ctx context.Context, location string, opts backends.Options, o Options) (Result, error) {
	if backends.IsRemote(location) {
		w, prefix, err := openBucket(ctx, location, opts)
		if err != nil {
			return Result{}, err
		}
		defer w.close()
		return w.walk(ctx, prefix, o)
	}
	return walkDir(ctx, location, o)
}

// NearTimeout is the most time Near spends looking: a store that answers
// slowly gets no "did you mean" rather than a long wait.
const NearTimeout = 5 * time.Second

// Near returns the datastores a --store location that holds none most
// likely meant, bounded to a few listings and
// NearTimeout in all (its
// opening of a bucket included): the datastore the location lies
// inside (an ancestor that is one: ".../store/.cnt", ".../store/vm/100"),
// else those a shallow walk finds below it, else, when the location is not
// there (a mistyped path or prefix), those below its parent (its
// siblings), closest to the location first (Rank; the closest also
// listed first). A directory that exists (an empty mount point with its disk
// not mounted) gets no siblings: another datastore beside it is not what
// it meant. The first listing that fails for a reason outside the data
// (chunkstore.Outside: the time bound, a timeout, a refusal, a server
// error) ends the probe with that error, as does one when nothing could
// be listed.
func Near(ctx context.Context, location string, opts backends.Options) ([]Datastore, error) {
	ctx, cancel := context.WithTimeout(ctx, NearTimeout)
	defer cancel()
	if backends.IsRemote(location) {
		w, prefix, err := openBucket(ctx, location, opts)
		if err != nil {
			return nil, err
		}
		defer w.close()
		return near(ctx, w, prefix)
	}
	return near(ctx, dirTree{}, filepath.Clean(location))
}

// near is Near in t from node start.
func near(ctx context.Context, t tree, start string) ([]Datastore, error) {
	st := &stopOnOutside{tree: t}
	t = st
	// Up: a location inside a datastore names it (at most nearUp levels).
	p := start
	for range nearUp {
		parent, ok := t.parent(p)
		if !ok {
			break
		}
		p = parent
		if layout, _, _, err := t.level(ctx, p); err == nil && layout != "" {
			return []Datastore{{Location: t.location(p), Layout: layout}}, nil
		}
		if st.err != nil {
			return nil, st.err
		}
	}
	// Down, then beside.
	r, err := walk(ctx, t, start, Options{MaxDepth: 3, MaxRequests: nearRequests})
	if len(r.Datastores) > 0 {
		return r.Datastores, nil
	}
	if st.err != nil {
		return nil, st.err
	}
	if err == nil && t.listingProvesThere() {
		return nil, nil
	}
	parent, ok := t.parent(start)
	if !ok {
		return nil, err
	}
	r, err2 := walk(ctx, t, parent, Options{MaxDepth: 2, MaxRequests: nearRequests, closeTo: start})
	if st.err != nil {
		return nil, st.err
	}
	if err != nil && err2 != nil {
		return nil, err
	}
	return Rank(t.location(start), r.Datastores), nil
}

// Rank returns ds sorted closest to the location given first: by the
// edit distance between the last path components (a bucket URL's last
// prefix component, a directory's base name), then by the longer prefix
// those share, then by Location. ds is sorted in place and returned.
func Rank(given string, ds []Datastore) []Datastore {
	slices.SortStableFunc(ds, func(a, b Datastore) int { return byCloseness(given, a.Location, b.Location) })
	return ds
}

// byCloseness compares a and b (locations or node names) by closeness to
// given, as Rank orders them: negative when a is closer.
func byCloseness(given, a, b string) int {
	g := lastComponent(given)
	la, lb := lastComponent(a), lastComponent(b)
	if da, db := editDistance(g, la), editDistance(g, lb); da != db {
		return da - db
	}
	if pa, pb := sharedPrefix(g, la), sharedPrefix(g, lb); pa != pb {
		return pb - pa
	}
	return strings.Compare(a, b)
}

// lastComponent is the last '/'-separated component of a location or
// node name, trailing separators and a bucket location's settings (its
// query) ignored.
func lastComponent(p string) string {
	p = strings.TrimRight(filepath.ToSlash(backends.BaseSpec(p)), "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// sharedPrefix is the length in bytes of the longest common prefix of a
// and b.
func sharedPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// stopOnOutside is a tree whose listings, once one has failed for a
// reason outside the data (chunkstore.Outside, the context ending), all
// fail at once with that error (err), making no request: a probe of a
// slow or failing store stops at its first such failure.
type stopOnOutside struct {
	tree
	err error
}

func (s *stopOnOutside) level(ctx context.Context, p string) (string, []string, []string, error) {
	if s.err != nil {
		return "", nil, nil, s.err
	}
	layout, children, links, err := s.tree.level(ctx, p)
	if err != nil && (chunkstore.Outside(err) || ctx.Err() != nil) {
		s.err = err
	}
	return layout, children, links, err
}

// Bounds of Near: levels looked up, listings of each walk down.
const (
	nearUp       = 8
	nearRequests = 12
)

// tree is what a walk lists: a bucket's prefixes or a directory tree.
type tree interface {
	// level lists the node p: its layout if it is a datastore ("" if not),
	// its children to walk (full node names, sorted) and the symbolic
	// links among its entries, not followed (full names).
	level(ctx context.Context, p string) (layout string, children, links []string, err error)
	// location names node p as --store takes it.
	location(p string) string
	// parent returns p's parent node, false at the top.
	parent(p string) (string, bool)
	// listingProvesThere reports whether a node listed without error
	// exists (a directory) rather than maybe not (a bucket prefix lists
	// empty whether or not anything was ever put there).
	listingProvesThere() bool
}

// walk is the breadth-first walk of t from start bounded by o.
func walk(ctx context.Context, t tree, start string, o Options) (Result, error) {
	maxDepth, maxRequests := o.bounds()
	type node struct {
		p     string
		depth int
	}
	var r Result
	queue := []node{{start, 0}}
	beyond, nlinks, link := 0, 0, ""
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		n := queue[0]
		if r.Requests >= maxRequests {
			r.LeftOut = append(r.LeftOut, fmt.Sprintf("%d location(s) not listed: the walk stops after %d listings", len(queue), maxRequests))
			break
		}
		queue = queue[1:]
		layout, children, links, err := t.level(ctx, n.p)
		r.Requests++
		if nlinks == 0 && len(links) > 0 {
			link = links[0]
		}
		nlinks += len(links)
		if err != nil {
			if n.depth == 0 {
				return r, err
			}
			r.LeftOut = append(r.LeftOut, fmt.Sprintf("%s: not listed: %v", t.location(n.p), err))
			continue
		}
		if layout != "" {
			r.Datastores = append(r.Datastores, Datastore{Location: t.location(n.p), Layout: layout})
			continue
		}
		if n.depth >= maxDepth {
			beyond += len(children)
			continue
		}
		if n.depth == 0 && o.closeTo != "" {
			children = slices.Clone(children)
			slices.SortStableFunc(children, func(a, b string) int { return byCloseness(o.closeTo, a, b) })
		}
		for _, c := range children {
			queue = append(queue, node{c, n.depth + 1})
		}
	}
	slices.SortFunc(r.Datastores, func(a, b Datastore) int { return strings.Compare(a.Location, b.Location) })
	if beyond > 0 {
		r.LeftOut = append(r.LeftOut, fmt.Sprintf("%d location(s) more than %d levels below the start not walked (--max-depth)", beyond, maxDepth))
	}
	if nlinks > 0 {
		r.LeftOut = append(r.LeftOut, fmt.Sprintf("%d symbolic link(s) not followed (a datastore behind one is not looked for: give its target as the location), e.g. %q", nlinks, t.location(link)))
	}
	return r, nil
}

// bucketTree walks the prefixes of one bucket with delimiter listings.
type bucketTree struct {
	l      bucket.Lister
	scheme string
	bucket string
	// query is the walked location's per-store settings as
	// backends.DisplaySpec prints them ("?endpoint=…", or ""): every
	// location found carries them, so that it opens, as --store, the
	// store the walk listed.
	query string
	store interface{ Close() error }
}

func (b bucketTree) close() { b.store.Close() }

// openBucket opens the bucket of location for walking and returns its
// prefix (no surrounding '/').
func openBucket(ctx context.Context, location string, opts backends.Options) (bucketTree, string, error) {
	scheme, _, _ := strings.Cut(location, "://")
	// The location's own settings (query parameters) apply to every
	// prefix walked.
	base, opts, err := backends.StoreOptions(location, opts)
	if err != nil {
		return bucketTree{}, "", err
	}
	bkt, prefix, err := bucket.ParseURL(scheme, base)
	if err != nil {
		return bucketTree{}, "", err
	}
	// A forced layout opens any prefix after one listing, which proves
	// the bucket readable.
	opts.Layout, opts.Create = bucket.LayoutPlain, false
	s, err := backends.Open(ctx, bucket.Keys{}.URL(scheme, bkt), opts)
	if err != nil {
		return bucketTree{}, "", err
	}
	lr, ok := s.(bucket.ListerReporter)
	if !ok {
		s.Close()
		return bucketTree{}, "", fmt.Errorf("%s: the %s:// backend cannot list its bucket", location, scheme)
	}
	var query string
	if _, q, ok := strings.Cut(backends.DisplaySpec(location), "?"); ok {
		query = "?" + q
	}
	return bucketTree{l: lr.Lister(), scheme: scheme, bucket: bkt, query: query, store: s}, prefix, nil
}

func (b bucketTree) level(ctx context.Context, p string) (string, []string, []string, error) {
	root := bucket.Keys{Prefix: p}.ContentBase() // p + "/", or "" at the bucket root
	dirs, objects, err := b.l.ListLevel(ctx, root)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%s: listing: %w", b.location(p), err)
	}
	switch {
	case slices.Contains(dirs, bucket.ContentDir+"/"), slices.Contains(objects, ".in-use"):
		return bucket.LayoutPBS4.String(), nil, nil, nil
	case slices.Contains(dirs, ".chunks/"):
		return bucket.LayoutPlain.String(), nil, nil, nil
	}
	var children []string
	for _, d := range dirs {
		name := strings.TrimSuffix(d, "/")
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			continue // no prefix ParseURL would take
		}
		children = append(children, strings.TrimPrefix(root+name, "/"))
	}
	slices.Sort(children)
	return "", children, nil, nil
}

func (bucketTree) listingProvesThere() bool { return false }

func (b bucketTree) location(p string) string {
	return bucket.Keys{Prefix: p}.URL(b.scheme, b.bucket) + b.query
}

func (b bucketTree) parent(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", true
	}
	return p[:i], true
}

func (b bucketTree) walk(ctx context.Context, prefix string, o Options) (Result, error) {
	return walk(ctx, b, prefix, o)
}

// dirTree walks a local directory tree without following links.
type dirTree struct{}

// walkDir walks the directory tree at root (a link as root is followed,
// none below it).
func walkDir(ctx context.Context, root string, o Options) (Result, error) {
	return walk(ctx, dirTree{}, filepath.Clean(root), o)
}

func (dirTree) level(_ context.Context, p string) (string, []string, []string, error) {
	entries, err := os.ReadDir(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, nil, fmt.Errorf("%s: %w", p, chunkstore.ErrNotFound)
		}
		return "", nil, nil, err
	}
	var children, links []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			links = append(links, filepath.Join(p, e.Name())) // never followed
			continue
		}
		if !e.IsDir() {
			continue
		}
		if e.Name() == ".chunks" {
			return LayoutDirectory, nil, nil, nil
		}
		children = append(children, filepath.Join(p, e.Name()))
	}
	return "", children, links, nil
}

func (dirTree) listingProvesThere() bool { return true }

func (dirTree) location(p string) string { return p }

func (dirTree) parent(p string) (string, bool) {
	d := filepath.Dir(p)
	if d == p {
		return "", false
	}
	return d, true
}
