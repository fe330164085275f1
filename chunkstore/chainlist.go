package chunkstore

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// snapshotManifest is the file that makes a directory a finished snapshot
// (snapshot.ManifestName, §1.4).
const snapshotManifest = "index.json.blob"

// unionState is what a Chain keeps for its listings: which member served
// each snapshot's manifest (its pin), what it has warned about, and where
// warnings go.
type unionState struct {
	mu       sync.Mutex
	pins     map[string]int // snapshot directory → member that served its manifest
	unlisted []string       // members whose listing failed, each once
	warnings Warnings
}

// Unlisted returns the names of the members whose listing (ListFiles,
// ListDirs) failed so far while others answered, in the order they failed,
// each once: what the chain's listings left out (see PartialLister).
func (c *Chain) Unlisted() []string {
	c.union.mu.Lock()
	defer c.union.mu.Unlock()
	return append([]string(nil), c.union.unlisted...)
}

// listFailed records that member m's listing failed while others answered,
// and says so once.
func (c *Chain) listFailed(m int, err error) {
	name := c.members[m].String()
	c.union.mu.Lock()
	if !slices.Contains(c.union.unlisted, name) {
		c.union.unlisted = append(c.union.unlisted, name)
	}
	c.union.mu.Unlock()
	c.say("list-failed\x00"+name, fmt.Sprintf("pbsdirect: warning: %s %s could not be listed (%v): listings come from the other stores", c.flagOf(m), name, err))
}

// WarnTo sets where the chain says that its members disagree: a snapshot
// listed by one member and missing from another (a copy that lags), or a
// member whose listing failed while others answered. Each is said once per
// member, as one line without a line end, from any goroutine. Call it
// before the chain is used; without it nothing is said.
func (c *Chain) WarnTo(f func(msg string)) { c.union.warnings.WarnTo(f) }

// Warn says msg where WarnTo sends warnings, once per non-empty key (see
// Warnings.Warn): what a listing over the chain left out.
func (c *Chain) Warn(key, msg string) { c.union.warnings.Warn(key, msg) }

// say calls the warning function once per key.
func (c *Chain) say(key, msg string) { c.union.warnings.Warn(key, msg) }

// openOrder returns the member indexes in the order OpenFile tries them for
// rel: the member pinned for rel's directory first, then the others in
// order of preference.
func (c *Chain) openOrder(rel string) []int {
	order := make([]int, 0, len(c.members))
	pin := -1
	if dir, name := path.Split(rel); name != snapshotManifest {
		c.union.mu.Lock()
		if p, ok := c.union.pins[path.Clean(dir)]; ok {
			pin = p
		}
		c.union.mu.Unlock()
	}
	if pin >= 0 {
		order = append(order, pin)
	}
	for i := range c.members {
		if i != pin {
			order = append(order, i)
		}
	}
	return order
}

// opened records that member m served rel: for a manifest, m becomes the
// pin of its directory.
func (c *Chain) opened(rel string, m int) {
	dir, name := path.Split(rel)
	if name != snapshotManifest {
		return
	}
	c.union.mu.Lock()
	if c.union.pins == nil {
		c.union.pins = map[string]int{}
	}
	c.union.pins[path.Clean(dir)] = m
	c.union.mu.Unlock()
}

// ListFiles lists dir in every member and returns the union, directory by
// directory: the files of each directory come from the first member whose
// listing of it holds a manifest (index.json.blob: the first store that
// has the snapshot), else from the first member that lists the directory.
// So a later store's newer snapshots are listed even when an earlier one
// lags; the disagreement is said through WarnTo. A member whose listing
// fails is left out (and said); when every listing fails, the errors are
// joined.
func (c *Chain) ListFiles(ctx context.Context, dir string) ([]FileInfo, error) {
	type dirFiles struct {
		files    []FileInfo
		manifest bool
	}
	lists := make([]map[string]*dirFiles, len(c.members))
	failed := make([]error, len(c.members))
	var errs []error
	for i, m := range c.members {
		files, err := m.ListFiles(ctx, dir)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			failed[i] = err
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			continue
		}
		byDir := map[string]*dirFiles{}
		for _, f := range files {
			d, name := path.Split(f.Path)
			d = path.Clean(d)
			df := byDir[d]
			if df == nil {
				df = &dirFiles{}
				byDir[d] = df
			}
			df.files = append(df.files, f)
			df.manifest = df.manifest || name == snapshotManifest
		}
		lists[i] = byDir
	}
	if len(errs) == len(c.members) {
		return nil, JoinErrors(errs...)
	}
	for i, err := range failed {
		if err != nil {
			c.listFailed(i, err)
		}
	}
	dirs := map[string]bool{}
	for _, l := range lists {
		for d := range l {
			dirs[d] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	var out []FileInfo
	lacks := make([]lacking, len(c.members))
	for _, d := range sorted {
		from := -1
		for i, l := range lists {
			if df := l[d]; df != nil && df.manifest {
				from = i
				break
			}
		}
		if from < 0 {
			for i, l := range lists {
				if l[d] != nil {
					from = i
					break
				}
			}
		} else {
			// A snapshot some member lacks: that member lags behind (or is ahead).
			for i, l := range lists {
				if l != nil && (l[d] == nil || !l[d].manifest) {
					lacks[i].add(d, from)
				}
			}
		}
		out = append(out, lists[from][d].files...)
	}
	for i, l := range lacks {
		if len(l.dirs) > 0 {
			c.say("lacks\x00"+c.members[i].String(), l.message(c, i))
		}
	}
	return out, nil
}

// lackShown is how many of the snapshots a member lacks its warning names.
const lackShown = 3

// lacking is what one member of a chain lacks in one listing: the
// snapshot directories other members hold, and which members hold them.
type lacking struct {
	dirs []string
	from []int // members holding them, each once
}

func (l *lacking) add(dir string, from int) {
	l.dirs = append(l.dirs, dir)
	if !slices.Contains(l.from, from) {
		l.from = append(l.from, from)
	}
}

// message is the one warning for member m of c: how many snapshots it
// lacks, the first lackShown of them, and which stores hold them, each
// named with its flag (NameFlags).
func (l *lacking) message(c *Chain, m int) string {
	shown := l.dirs[:min(len(l.dirs), lackShown)]
	list := strings.Join(shown, ", ")
	if len(l.dirs) > len(shown) {
		list += fmt.Sprintf(", and %d more", len(l.dirs)-len(shown))
	}
	holders := make([]string, len(l.from))
	for i, h := range l.from {
		holders[i] = c.flagOf(h) + " " + c.members[h].String()
	}
	verb := "holds"
	if len(holders) > 1 {
		verb = "hold"
	}
	return fmt.Sprintf("pbsdirect: warning: the stores disagree: %s %s lacks %d snapshot(s) that %s %s (%s); listings are the union of the stores, each snapshot read from the first store that has it",
		c.flagOf(m), c.members[m].String(), len(l.dirs), strings.Join(holders, " and "), verb, list)
}

// ListDirs returns the union of the directories its members that are
// DirListers list (see DirLister); a member whose listing fails is left
// out (ListFiles says so), and when every one fails the errors are joined.
func (c *Chain) ListDirs(ctx context.Context, dir string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var errs []error
	asked := 0
	type failure struct {
		m   int
		err error
	}
	var failedAt []failure
	for i, m := range c.members {
		dl, ok := m.(DirLister)
		if !ok {
			continue
		}
		asked++
		dirs, err := dl.ListDirs(ctx, dir)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			failedAt = append(failedAt, failure{i, err})
			continue
		}
		for _, d := range dirs {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	if asked > 0 && len(errs) == asked {
		return nil, JoinErrors(errs...)
	}
	for _, f := range failedAt {
		c.listFailed(f.m, f.err)
	}
	return out, nil
}
