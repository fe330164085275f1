package main

import (
	flag "github.com/spf13/pflag"

	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/repair"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

func cmdRepair(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.register(fs)
	from := fs.StringArray("from", nil, "a copy of the datastore to take good chunks and files from (directory, s3://… or gs://…); give it several times, in order of preference; without it only the store's own .bad copies are used")
	dryRun := fs.Bool("dry-run", false, "check and say what would be copied from where; write nothing")
	latest := fs.Bool("latest", false, "only the newest snapshot of each group (of TYPE/ID, or of every group in scope)")
	maxDepth := fs.Int("max-depth", 0, "also repair the chunks of child namespaces down to this many levels below --ns")
	allNS := fs.Bool("all-namespaces", false, "the chunks of the whole store: every namespace at any depth")
	jobs := fs.Int("jobs", repair.DefaultJobs, "chunks checked (and copied) at once")
	crcOnly := fs.Bool("crc-only", false, "without the key of an encrypted snapshot, check and copy its chunks by structure and CRC only (a forged copy cannot be excluded; each such chunk is flagged); without it such a snapshot is not repaired (key-missing); the default key file is not opened")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() > 1 {
			return usagef("want at most one SNAPSHOT or TYPE/ID, got %d arguments", fs.NArg())
		}
		if fs.NArg() == 1 {
			if err := checkSnapshotRef(fs.Arg(0)); err != nil {
				return err
			}
		}
		if err := sf.check(); err != nil {
			return err
		}
		if len(sf.stores) > 1 {
			return usagef("--store given %d times: repair writes into one store; give the copies to take chunks from with --from", len(sf.stores))
		}
		for i, f := range *from {
			f, err := sf.expandStore("--from", f)
			if err != nil {
				return err
			}
			(*from)[i] = f
			if err := checkStoreSpecFlag("--from", f); err != nil {
				return err
			}
			if backends.SameStore(f, sf.store) {
				return usagef("--from %s is the --store being repaired (without --from, repair takes chunks from the store's own .bad copies)", backends.DisplaySpec(f))
			}
		}
		if *maxDepth < 0 || *maxDepth > 7 {
			return usagef("--max-depth must be 0..7, not %d", *maxDepth)
		}
		if *jobs < 1 || *jobs > 1024 {
			return usagef("--jobs must be 1..1024, not %d", *jobs)
		}
		if *allNS && (fs.NArg() == 1 || sf.ns != "" || fs.Changed("max-depth")) {
			return usagef("--all-namespaces repairs the whole store: no SNAPSHOT, --ns or --max-depth with it")
		}
		nsa, err := sf.nsArg()
		if err != nil {
			return err
		}
		keys, err := newKeys(ctx, &sf, keyPolicy{noDefault: *crcOnly}, stderr)
		if err != nil {
			return err
		}
		opts, err := sf.backendOptions(false, *jobs)
		if err != nil {
			return err
		}
		// No lock: repair writes no snapshot, only chunks the indexes in
		// scope refer to, each atomically and never over a good one (see
		// package repair), as a backup writes its chunks.
		primary, err := backends.OpenWrite(ctx, sf.store, opts)
		if err != nil {
			return missingStore(err)
		}
		// A store that cannot be written is found before the scope is
		// read: a directory is probed; a bucket has no cheap probe, and
		// the repair stops at its first failed write (Repairer.Stopped).
		if p, ok := primary.(chunkstore.WriteProber); ok && !*dryRun {
			if err := p.ProbeWrite(ctx); err != nil {
				primary.Close()
				return &outsideError{fmt.Errorf("--store %s cannot be written, nothing repaired (--dry-run says what would be): %w", backends.DisplaySpec(sf.store), err)}
			}
		}
		members := []chunkstore.Store{primary}
		var mirrors []chunkstore.Store
		for _, f := range *from {
			m, err := backends.Open(ctx, f, opts)
			if err != nil {
				for _, s := range members {
					s.Close()
				}
				return fromError(f, missingStore(err))
			}
			members = append(members, m)
			mirrors = append(mirrors, m)
		}
		// Listings and indexes come from every store: the primary may
		// have lost an index too.
		all, err := chunkstore.NewChain(members...)
		if err != nil {
			return err
		}
		defer all.Close()
		flags := []string{"--store"}
		for range mirrors {
			flags = append(flags, "--from")
		}
		all.NameFlags(flags...)
		warnDisagreement(stderr, all)
		ns, err := nsa.resolve(ctx, all, false)
		if err != nil {
			return err
		}
		sc := verify.Scope{NS: ns, MaxDepth: *maxDepth, Latest: *latest}
		if *allNS {
			sc.MaxDepth = -1
		}
		if fs.NArg() == 1 {
			sc.Ref = fs.Arg(0)
		}
		sel, err := verify.Select(ctx, all, sc)
		if err != nil {
			return err
		}
		rep := repair.Report{Primary: primary.String(), DryRun: *dryRun, Snapshots: len(sel.Snapshots), Items: []repair.Item{}}
		for _, m := range mirrors {
			rep.From = append(rep.From, m.String())
		}
		chunks, cerrs := repair.Collect(ctx, all, sel.Snapshots, keys, *crcOnly)
		var outside, proven error
		keyed := sel.Snapshots // the snapshots whose files are repaired
		for _, e := range cerrs {
			var km *repair.KeyMissingError
			if errors.As(e, &km) {
				rep.KeyMissing = append(rep.KeyMissing, repair.KeyMissing{Snapshot: km.Snapshot.String(), Status: km.Status, KeyFingerprint: km.Fingerprint, Error: e.Error()})
				keyed = slices.DeleteFunc(slices.Clone(keyed), func(s index.Snapshot) bool { return s.String() == km.Snapshot.String() })
				if !sf.json() {
					fmt.Fprintf(stdout, "repair: %s\n", index.DisplayText(e.Error()))
				}
				continue
			}
			rep.Errors = append(rep.Errors, e.Error())
			if restore.Proven(e) {
				proven = cmp.Or(proven, e)
			} else {
				outside = cmp.Or(outside, e)
			}
			if !sf.json() {
				fmt.Fprintf(stdout, "repair: %s: chunks not checked\n", index.DisplayText(e.Error()))
			}
		}
		r := repair.New(primary, mirrors, repair.Options{DryRun: *dryRun, Jobs: *jobs, Each: func(it repair.Item) {
			if !sf.json() {
				writeRepairItem(stdout, primary, mirrors, it)
			}
		}})
		// The snapshots' files first: a chunk list read from a mirror's
		// index is then the primary's too.
		fitems, fcounts, runErr := r.Files(ctx, keyed)
		rep.Items, rep.Files = append(rep.Items, fitems...), fcounts
		var counts repair.Counts
		if runErr == nil {
			var items []repair.Item
			items, counts, runErr = r.Run(ctx, chunks)
			rep.Items, rep.Counts = append(rep.Items, items...), counts
		} else {
			counts.Unfinished = len(chunks)
			rep.Counts = counts
		}
		if runErr != nil && ctx.Err() == nil {
			return runErr
		}
		var verr error
		switch {
		case ctx.Err() != nil:
			// Interrupted: what was done so far is said, then the
			// interruption (exit 130 or 143).
			rep.Interrupted = true
			verr = cmp.Or(runErr, ctx.Err())
		case r.Stopped() != nil:
			verr = &outsideError{fmt.Errorf("repair stopped: writing into %s failed: %w; %d chunk(s) not checked", primary, r.Stopped(), counts.Unfinished)}
		case counts.Failed > 0 || fcounts.Failed > 0 || outside != nil:
			verr = &outsideError{fmt.Errorf("repair incomplete: %d chunk(s) and %d file(s) failed: a store could not be read, or %s written%s", counts.Failed, fcounts.Failed, primary, errSuffix(outside))}
		case counts.NoCopy > 0 || fcounts.NoCopy > 0 || fcounts.NotReplaced > 0 || proven != nil:
			var parts []string
			if counts.NoCopy > 0 || fcounts.NoCopy > 0 || fcounts.NotReplaced == 0 {
				parts = append(parts, fmt.Sprintf("%d chunk(s) and %d file(s) in no store in good shape", counts.NoCopy, fcounts.NoCopy))
			}
			if nr := notReplacedText(rep.Items); nr != "" {
				parts = append(parts, nr)
			}
			verr = &dataError{fmt.Errorf("repair incomplete: %s%s", strings.Join(parts, "; "), errSuffix(proven))}
		case len(rep.KeyMissing) > 0:
			verr = &outsideError{fmt.Errorf("repair incomplete: %d snapshot(s) not repaired for want of their key (give --keyfile, or --crc-only)", len(rep.KeyMissing))}
		}
		if counts.CRCOnly > 0 {
			rep.CRCOnlyWarning = fmt.Sprintf("%d chunk(s) checked by CRC only (no key): a forged copy (another chunk's valid bytes under its name) cannot be excluded; verify with the key", counts.CRCOnly)
		}
		rep.OK = verr == nil
		rep.ExitCode = codeFor(ctx, verr)
		if sf.json() {
			if err := writeJSON(stdout, rep); err != nil {
				return err
			}
		} else {
			writeRepairSummary(stdout, &rep)
		}
		return verr
	}
}

// notReplacedText says how many of items are manifests not replaced
// (damaged on the primary, repair.ActionNotReplaced) and where a good copy
// is: "1 manifest not replaced (damaged on the primary; a good copy exists
// on MIRROR; replace it by hand after checking)"; "" when there are none.
// Store names are escaped.
func notReplacedText(items []repair.Item) string {
	n, without := 0, 0
	var on []string
	for _, it := range items {
		if it.Action != repair.ActionNotReplaced {
			continue
		}
		n++
		if it.Source == "" {
			without++
		} else if src := index.DisplayText(it.Source); !slices.Contains(on, src) {
			on = append(on, src)
		}
	}
	if n == 0 {
		return ""
	}
	what := "1 manifest"
	if n > 1 {
		what = fmt.Sprintf("%d manifests", n)
	}
	var where string
	switch {
	case without == n:
		where = "no store has a good copy"
	case without > 0:
		where = fmt.Sprintf("a good copy exists on %s for %d of them, in no store for the others; replace them by hand after checking", strings.Join(on, ", "), n-without)
	default:
		it := "it"
		if n > 1 {
			it = "them"
		}
		where = fmt.Sprintf("a good copy exists on %s; replace %s by hand after checking", strings.Join(on, ", "), it)
	}
	return fmt.Sprintf("%s not replaced (damaged on the primary; %s)", what, where)
}

// errSuffix is "; " and err's text, or "" for nil.
func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

// writeRepairItem prints one chunk or file the primary lacked or held
// damaged and what was done about it: the digest or file named once,
// each store tried with what it said, store-controlled text escaped.
func writeRepairItem(w io.Writer, primary chunkstore.Store, mirrors []chunkstore.Store, it repair.Item) {
	name, stores := it.File, append([]chunkstore.Store{primary}, mirrors...)
	if it.Kind == repair.KindChunk {
		name = it.Digest
	}
	// What is said of the chunk or file without naming it again.
	terse := func(text string) string {
		text = strings.ReplaceAll(text, "chunk "+it.Digest+": ", "")
		if it.Kind == repair.KindChunk {
			if d, err := crypto.ParseDigest(it.Digest); err == nil {
				for _, s := range stores {
					loc := s.ChunkLocation(d)
					text = strings.ReplaceAll(text, "open "+loc+": ", "")
					text = strings.ReplaceAll(text, loc+": ", "")
				}
			}
		} else {
			text = strings.ReplaceAll(text, it.File+": ", "")
		}
		return index.DisplayText(text)
	}
	what := it.Problem
	if what == "" {
		what = "unreadable"
	}
	if it.Problem != repair.ProblemMissing {
		what += " (" + terse(it.Error) + ")"
	}
	tried := ""
	if len(it.Tried) > 0 {
		t := make([]string, len(it.Tried))
		for i, s := range it.Tried {
			t[i] = terse(s)
		}
		tried = "tried " + strings.Join(t, "; ")
	}
	var did string
	switch it.Action {
	case repair.ActionCopied, repair.ActionWouldCopy:
		did = "copied from " + index.DisplayText(it.Source)
		if it.Action == repair.ActionWouldCopy {
			did = "would copy from " + index.DisplayText(it.Source) + " (dry run)"
		}
		if it.Aside != "" {
			did += ", the damaged copy kept as " + index.DisplayText(it.Aside)
		}
		if tried != "" {
			did += " (" + strings.Replace(tried, "tried", "tried first", 1) + ")"
		}
	case repair.ActionGoodNow:
		did = "good when checked again (written meanwhile): left as it is"
	case repair.ActionNoCopy:
		did = "NO STORE HAS A GOOD COPY"
		if len(mirrors) == 0 && it.Kind == repair.KindChunk {
			did = "NO GOOD COPY (no --from given: only the store's own .bad copies were tried)"
		}
		if it.WriteError != "" {
			did += ": " + index.DisplayText(it.WriteError)
		}
		if tried != "" {
			did += ": " + tried
		}
	case repair.ActionNotReplaced:
		did = "NOT REPLACED: " + index.DisplayText(it.WriteError)
	default:
		did = "FAILED"
		if it.WriteError != "" {
			did += ": " + index.DisplayText(it.WriteError)
		}
		if tried != "" {
			did += "; " + tried
		}
	}
	if it.CRCOnly {
		did += " (checked by CRC only (no key))"
	}
	fmt.Fprintf(w, "repair: %s %s %s in %s: %s\n", it.Kind, index.DisplayText(name), what, index.DisplayText(primary.String()), did)
}

// writeRepairSummary prints the last line of a repair: the counts and ok
// or FAILED.
func writeRepairSummary(w io.Writer, rep *repair.Report) {
	c, f := rep.Counts, rep.Files
	copied := fmt.Sprintf("%d copied", c.Repaired)
	fcopied := fmt.Sprintf("%d copied", f.Repaired)
	if rep.DryRun {
		copied = fmt.Sprintf("%d would be copied (dry run: nothing written)", c.Would)
		fcopied = fmt.Sprintf("%d would be copied", f.Would)
	}
	from := "its own .bad copies"
	if len(rep.From) > 0 {
		from = strings.Join(rep.From, ", ")
	}
	fmt.Fprintf(w, "repair of %s from %s: %d file(s) of %d snapshot(s) checked, %d good, %s",
		index.DisplayText(rep.Primary), index.DisplayText(from), f.Checked, rep.Snapshots, f.Good, fcopied)
	if f.NoCopy > 0 {
		fmt.Fprintf(w, ", %d in no store in good shape", f.NoCopy)
	}
	if f.NotReplaced > 0 {
		fmt.Fprintf(w, ", %d manifest(s) not replaced (see above)", f.NotReplaced)
	}
	if f.Failed > 0 {
		fmt.Fprintf(w, ", %d failed", f.Failed)
	}
	fmt.Fprintf(w, "; %d chunk(s) checked, %d good, %s", c.Chunks, c.Good, copied)
	if c.GoodNow > 0 {
		fmt.Fprintf(w, ", %d good meanwhile", c.GoodNow)
	}
	if c.NoCopy > 0 {
		fmt.Fprintf(w, ", %d in no store in good shape", c.NoCopy)
	}
	if c.Failed > 0 {
		fmt.Fprintf(w, ", %d failed", c.Failed)
	}
	if c.Unfinished > 0 && rep.Interrupted {
		fmt.Fprintf(w, ", %d not checked (interrupted)", c.Unfinished)
	} else if c.Unfinished > 0 {
		fmt.Fprintf(w, ", %d not checked (stopped)", c.Unfinished)
	}
	if c.Unlisted > 0 {
		fmt.Fprintf(w, " (%d not in the report: see the lines above)", c.Unlisted)
	}
	if len(rep.KeyMissing) > 0 {
		fmt.Fprintf(w, "; %d snapshot(s) not repaired for want of their key", len(rep.KeyMissing))
	}
	word := okWord(rep.OK)
	if rep.Interrupted {
		word = "INTERRUPTED"
	}
	fmt.Fprintf(w, ": %s\n", word)
	if rep.CRCOnlyWarning != "" {
		fmt.Fprintf(w, "repair: WARNING: %s\n", rep.CRCOnlyWarning)
	}
}

// repairCommand is 'pbsdirect repair'.
func repairCommand() commandSpec {
	return commandSpec{
		use:   "repair --store PRIMARY [--from MIRROR…] [flags] [SNAPSHOT | TYPE/ID]",
		short: "copy the chunks and snapshot files a store lacks or holds damaged from a copy of it",
		long: `Repair a datastore (directory or bucket) from copies of it: every chunk of
the snapshots in scope (one snapshot, a group, a namespace with --max-depth,
the whole store with --all-namespaces, as verify) is read from --store and
checked as verify checks it; one that is missing or damaged is read from
the --from stores in order, and the first copy that passes the same check is
written into --store: atomically (a temporary file renamed into place; one
PUT in a bucket), never over a good chunk (checked again just before), a
damaged copy kept aside as <digest>.N.bad as PBS does. When no --from store
has a good copy (or no --from is given), the copies kept aside as
<digest>.N.bad are tried, the store's own first, then the --from stores':
one that passes the chunk's check is copied into place under the chunk's
name (the .bad copy is left as it is).

The snapshots' files are checked too, as verify checks them: an index
(.fidx, .didx) or blob that is missing or does not match the manifest is
copied from the first --from store whose copy matches it (atomically, as
backup writes it); a missing manifest is copied when the --from stores that
hold one hold the same. A manifest that is there but differs is never
replaced: it is reported. --dry-run says what would be copied from where
and writes nothing. Each such chunk or file is reported with its problem,
its source and what was done. An encrypted chunk can only be proven with its
key: a snapshot with encrypted archives whose key is not given is not
repaired (key-missing, its fingerprint named; nothing of it copied) unless
--crc-only is given: then its chunks are checked by structure and CRC only,
each such chunk flagged "checked by CRC only (no key)" (a forged copy cannot
be excluded). Exits 0 only when verify of --store alone would pass for the
scope; 1 when a chunk or file is in no store in good shape, 3 when a store
could not be read or written or a snapshot's key is missing.

Memory: the distinct chunks of the scope are listed first, about 100 bytes
each (10 M chunks: about 1 GiB); the report lists the first 10000 chunks that
needed repair and counts the rest.`,
		example: `  pbsdirect repair --store /mnt/ds
  pbsdirect repair --store /mnt/ds --from s3://mirror/ds --dry-run
  pbsdirect repair --store /mnt/ds --from /mnt/mirror --from s3://mirror/ds vm/100`,
		build:    cmdRepair,
		complete: completeOneSnapshot,
	}
}

// fromError returns err, opening the store spec given with --from, as
// "--from SPEC: why": err itself when it already begins with the store
// (the backends' errors do), so that the store is not named twice.
func fromError(spec string, err error) error {
	if strings.HasPrefix(err.Error(), backends.BaseSpec(spec)) {
		return fmt.Errorf("--from %w", err)
	}
	return fmt.Errorf("--from %s: %w", backends.DisplaySpec(spec), err)
}
