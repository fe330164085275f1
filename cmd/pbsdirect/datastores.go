package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/discover"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// datastoreEntry is one datastore of the 'datastores' listing: where it
// is, its layout and what it holds (snapshot.Summary), or why that could
// not be counted.
type datastoreEntry struct {
	discover.Datastore
	snapshot.Summary
	Error string `json:"error,omitempty"` // counting failed
}

// datastoresReport is the JSON form of 'datastores'.
type datastoresReport struct {
	Location   string           `json:"location"`
	Datastores []datastoreEntry `json:"datastores"`
	Requests   int              `json:"listings"` // listings the walk made
	LeftOut    []string         `json:"left-out"` // what the walk did not look at ([] when nothing)
}

func cmdDatastores(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	// The bucket settings of the store flags; LOCATION takes --store's place.
	tmp := flag.NewFlagSet("", flag.ContinueOnError)
	sf.registerLocation(tmp)
	tmp.VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "store", "ns", "bucket-layout":
		default:
			fs.AddFlag(f)
		}
	})
	sf.registerOutput(fs)
	maxDepth := fs.Int("max-depth", discover.DefaultMaxDepth, "look at most this many directory or prefix levels below LOCATION")
	maxListings := fs.Int("max-listings", discover.DefaultMaxRequests, "list at most this many directories or bucket prefixes (one delimiter listing each)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usagef("datastores takes one LOCATION: a directory, s3://bucket[/prefix] or gs://bucket[/prefix]")
		}
		if *maxDepth < 1 || *maxListings < 1 {
			return usagef("--max-depth and --max-listings must be at least 1")
		}
		// LOCATION checked as itself, not as a --store.
		loc, err := sf.expandStore("LOCATION", args[0])
		if err != nil {
			return err
		}
		if err := checkStoreSpecFlag("LOCATION", loc); err != nil {
			return err
		}
		sf.stores = []string{loc}
		if err := sf.check(); err != nil {
			return err
		}
		opts, err := sf.backendOptions(false, manifestReads)
		if err != nil {
			return err
		}
		found, err := discover.Find(ctx, sf.store, opts, discover.Options{MaxDepth: *maxDepth, MaxRequests: *maxListings})
		if err != nil {
			if errors.Is(err, chunkstore.ErrNotFound) {
				return &storeMissingError{fmt.Errorf("no datastore under %s: %w", backends.DisplaySpec(sf.store), err)}
			}
			return locationError(sf.store, err)
		}
		rep := datastoresReport{Location: backends.DisplaySpec(sf.store), Datastores: []datastoreEntry{}, Requests: found.Requests, LeftOut: append([]string{}, found.LeftOut...)}
		var failed []string
		for _, d := range found.Datastores {
			e := datastoreEntry{Datastore: d}
			if sum, err := summarize(ctx, d, opts); err != nil {
				e.Error = err.Error()
				failed = append(failed, d.Location)
			} else {
				e.Summary = sum
			}
			rep.Datastores = append(rep.Datastores, e)
		}
		for _, l := range found.LeftOut {
			fmt.Fprintf(stderr, "pbsdirect: note: %s\n", index.DisplayText(l))
		}
		if len(found.Datastores) == 0 {
			fmt.Fprintf(stderr, "pbsdirect: note: no datastore found under %s (%d listing(s), --max-depth %d)\n", index.DisplayText(backends.DisplaySpec(sf.store)), found.Requests, *maxDepth)
		}
		var werr error
		if sf.json() {
			werr = writeJSON(stdout, rep)
		} else {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "location\tlayout\tnamespaces\tgroups\tsnapshots\tnewest")
			for _, e := range rep.Datastores {
				if e.Error != "" {
					fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\tnot counted: %s\n", index.DisplayText(e.Location), e.Layout, index.DisplayText(e.Error))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", index.DisplayText(e.Location), e.Layout, e.Namespaces, e.Groups, e.Snapshots, orDash(e.Newest))
			}
			werr = tw.Flush()
		}
		if werr == nil && len(failed) > 0 {
			werr = &outsideError{fmt.Errorf("%d datastore(s) found could not be counted: %s", len(failed), strings.Join(failed, ", "))}
		}
		return werr
	}
}

// locationError returns err, from the walk under the bucket location
// spec, beginning with the location as the reports name it
// (backends.DisplaySpec: with its settings, secrets left out) in place of
// the bare bucket URL the backends' errors begin with; err itself when it
// does not begin with one. It unwraps to err.
func locationError(spec string, err error) error {
	why := err.Error()
	display := backends.DisplaySpec(spec)
	i := strings.Index(why, ": ")
	if i <= 0 || !strings.Contains(spec, "://") || strings.HasPrefix(why, display) {
		return err
	}
	if named := why[:i]; strings.Contains(named, "://") && strings.HasPrefix(backends.BaseSpec(spec)+"/", strings.TrimSuffix(named, "/")+"/") {
		return &textError{text: display + why[i:], err: err}
	}
	return err
}

// textError is err with another text (the same cause, said otherwise).
type textError struct {
	text string
	err  error
}

// Error returns the text.
func (e *textError) Error() string { return e.text }

// Unwrap returns the cause.
func (e *textError) Unwrap() error { return e.err }

// summarize opens the datastore d in the layout found (a PBS 4 datastore
// with nothing but its .in-use marker opens, empty) and counts what it
// holds.
func summarize(ctx context.Context, d discover.Datastore, opts backends.Options) (snapshot.Summary, error) {
	if d.Layout != discover.LayoutDirectory {
		l, err := backends.ParseLayout(d.Layout)
		if err != nil {
			return snapshot.Summary{}, err
		}
		opts.Layout = l
	}
	s, err := backends.Open(ctx, d.Location, opts)
	if err != nil {
		return snapshot.Summary{}, err
	}
	defer s.Close()
	return snapshot.Summarize(ctx, s)
}

// nearError is a --store that holds no datastore, with the datastores
// found near it (discover.Near): it says "did you mean --store X (or Y)?"
// after the opening error, without the generic hint at the usual causes
// (storeMissingError); or, with empty and none near, that the directory
// is empty: a disk not mounted there. It exits as the opening error does.
type nearError struct {
	err   error
	near  []discover.Datastore // the closest first, at most nearMax
	more  int                  // how many more were found than near holds
	under string               // where 'datastores' lists them all, when more > 0
	empty string               // the empty directory --store names, when near is empty
}

// Error is the opening error and the datastores found near it, or the
// empty directory's hint.
func (e *nearError) Error() string {
	base := e.err.Error()
	var sm *storeMissingError
	if errors.As(e.err, &sm) {
		base = sm.err.Error() // the specific hint replaces the generic one
	}
	if len(e.near) == 0 {
		return fmt.Sprintf("%s (%s is an empty directory: a disk not mounted there? mount it and retry)", base, index.DisplayText(e.empty))
	}
	var locs []string
	for _, d := range e.near {
		locs = append(locs, index.DisplayText(d.Location))
	}
	alt := locs[0]
	if len(locs) > 1 {
		alt += " (or " + strings.Join(locs[1:], ", ") + ")"
	}
	if e.more > 0 {
		alt += fmt.Sprintf(", and %d more (pbsdirect datastores %s lists them)", e.more, index.DisplayText(e.under))
	}
	return fmt.Sprintf("%s; did you mean --store %s?", base, alt)
}

// Unwrap returns the opening error.
func (e *nearError) Unwrap() error { return e.err }

// nearMax is the most datastores a "did you mean" names.
const nearMax = 5

// withNear returns err, opening the one store spec, with the datastores
// found near spec (a bounded probe: discover.Near) when it says no
// datastore is there (chunkstore.ErrNotFound), or with the hint that spec
// is an empty directory (an unmounted mount point) when none is near;
// else err as it is.
func withNear(ctx context.Context, spec string, opts backends.Options, err error) error {
	if err == nil || !errors.Is(err, chunkstore.ErrNotFound) || chunkstore.Outside(err) || ctx.Err() != nil {
		return err
	}
	opts.Create = false
	near, nerr := discover.Near(ctx, spec, opts)
	if nerr != nil || len(near) == 0 {
		if !backends.IsRemote(spec) && nerr == nil {
			if entries, rerr := os.ReadDir(spec); rerr == nil && len(entries) == 0 {
				return &nearError{err: err, empty: spec}
			}
		}
		return err
	}
	ne := &nearError{err: err, near: near}
	if len(near) > nearMax {
		ne.near, ne.more, ne.under = near[:nearMax], len(near)-nearMax, commonParent(near)
	}
	return ne
}

// commonParent is the longest '/'-ended prefix the datastores' locations
// share, without its trailing '/' (a directory or a bucket prefix that
// holds them all), with the per-store settings (query) of bucket
// locations, which share them; "." when they share none.
func commonParent(ds []discover.Datastore) string {
	p := backends.BaseSpec(ds[0].Location)
	query := strings.TrimPrefix(ds[0].Location, p)
	for _, d := range ds[1:] {
		loc := backends.BaseSpec(d.Location)
		n := 0
		for n < len(p) && n < len(loc) && p[n] == loc[n] {
			n++
		}
		p = p[:n]
	}
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "."
	}
	if i == 0 || strings.HasSuffix(p[:i], ":/") {
		return p[:i+1] + query // "/" or "s3://"
	}
	return p[:i] + query
}

// datastoresCommand is 'pbsdirect datastores'.
func datastoresCommand() commandSpec {
	return commandSpec{
		use:   "datastores [flags] LOCATION",
		short: "find the datastores under a directory or a bucket prefix",
		long: `Find the PBS datastores under LOCATION — a directory, s3://bucket[/prefix] or
gs://bucket[/prefix] — and count their namespaces, backup groups and finished
snapshots, with the newest snapshot. A directory with a .chunks directory is a
datastore; in a bucket a prefix with objects below .cnt/ or an .in-use marker
is a PBS 4 S3 datastore (layout pbs4-s3), one with objects below .chunks/ a
copy of a datastore directory (layout plain). The walk goes at most
--max-depth levels down, makes at most --max-listings listings (the first
page of each bucket level), never descends into a datastore and never follows
a symbolic link; what it left out is said on stderr. Give a location found as
--store to the other commands.

Exit 0 also when none is found (a note says so on stderr); 3 when LOCATION
cannot be listed (no such directory or bucket, unreachable, refused) or a
datastore found cannot be counted.`,
		example: `  pbsdirect datastores s3://pbs-backups
  pbsdirect datastores /mnt --max-depth 2 --output-format json`,
		build:    cmdDatastores,
		complete: completeNothing,
	}
}
