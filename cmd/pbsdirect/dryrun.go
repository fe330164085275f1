package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// dryRunFlags are the flags of a dry run (restore, drill, verify).
type dryRunFlags struct {
	dryRun       *bool
	checkPresent *bool
	assumeRate   *string
	priceTable   *string
	provider     *string
}

// registerDryRunFlags adds --dry-run and its companions to fs.
func registerDryRunFlags(fs *flag.FlagSet) *dryRunFlags {
	return &dryRunFlags{
		dryRun:       fs.Bool("dry-run", false, "fetch no chunk: say what the run would fetch (unique chunks, encoded bytes, GET requests), the zero share, the positions a --base or --in-place skips, the estimated time and the request and egress cost; exit 1 when --check-present finds chunks missing"),
		checkPresent: fs.Bool("check-present", false, "with --dry-run: check that each chunk to fetch is in the store (a stat each for a directory, a HEAD request each for a bucket, counted in the report) and take its stored size from the answer"),
		assumeRate:   fs.String("assume-rate", "", "with --dry-run: estimate the time at this many bytes a second (e.g. 200MiB, 1G); without it no time is estimated (reading the index says nothing of the rate chunks come at)"),
		priceTable:   fs.String("price-table", "", "with --dry-run: a JSON file of prices per provider ({\"NAME\": {\"get-per-1000\": USD, \"head-per-1000\": USD, \"egress-per-gib\": USD}}) replacing or adding to the built-in table"),
		provider:     fs.String("price-provider", "", "with --dry-run: the price table's entry to use (built in: aws-s3, gcs, r2, b2, wasabi, local); default: from --store and --s3-endpoint"),
	}
}

// check validates the dry run's flags; errors are usage errors.
func (f *dryRunFlags) check(fs *flag.FlagSet) error {
	if !*f.dryRun {
		for _, name := range []string{"check-present", "assume-rate", "price-table", "price-provider"} {
			if fs.Changed(name) {
				return usagef("--%s is for --dry-run", name)
			}
		}
		return nil
	}
	if *f.assumeRate != "" {
		if n, err := parseSize(strings.TrimSuffix(*f.assumeRate, "/s")); err != nil || n <= 0 {
			return usagef("--assume-rate %q: want bytes a second, e.g. 200MiB or 1G", *f.assumeRate)
		}
	}
	if _, err := f.prices(); err != nil {
		return usageOf(err)
	}
	return nil
}

// price is one provider's prices in USD.
type price struct {
	GetPer1000  float64 `json:"get-per-1000"`  // GET requests, per 1000
	HeadPer1000 float64 `json:"head-per-1000"` // HEAD requests, per 1000
	EgressPerGB float64 `json:"egress-per-gib"`
	Note        string  `json:"note,omitempty"`
}

//go:embed prices.json
var builtinPrices []byte

// prices returns the built-in price table with --price-table's entries over
// it. A table with keys other than a price's, or a negative price, is an
// error naming the file.
func (f *dryRunFlags) prices() (map[string]price, error) {
	table := map[string]price{}
	if err := json.Unmarshal(builtinPrices, &table); err != nil {
		return nil, err
	}
	if *f.priceTable == "" {
		return table, nil
	}
	b, err := os.ReadFile(*f.priceTable)
	if err != nil {
		return nil, fmt.Errorf("--price-table: %w", err)
	}
	var user map[string]price
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a mistyped key would price at $0
	if err := dec.Decode(&user); err != nil {
		return nil, fmt.Errorf("--price-table %s: want {\"NAME\": {\"get-per-1000\": USD, \"head-per-1000\": USD, \"egress-per-gib\": USD}}: %v", index.DisplayText(*f.priceTable), err)
	}
	for k, v := range user {
		if v.GetPer1000 < 0 || v.HeadPer1000 < 0 || v.EgressPerGB < 0 {
			return nil, fmt.Errorf("--price-table %s: entry %s: a price is negative", index.DisplayText(*f.priceTable), index.DisplayText(k))
		}
		table[k] = v
	}
	return table, nil
}

// providerOf names the price table entry of the store spec: gcs, local,
// or for s3:// the provider its endpoint names (the spec's own endpoint=
// over the --s3-endpoint flag, over AWS_ENDPOINT_URL_S3); no endpoint or an
// amazonaws.com one is aws-s3. Another endpoint is "" (unknown: no cost is
// estimated unless --price-provider names one).
func providerOf(spec, endpoint, envEndpoint string) string {
	switch {
	case strings.HasPrefix(spec, "gs://"):
		return "gcs"
	case !strings.HasPrefix(spec, "s3://"):
		return "local"
	}
	if endpoint == "" {
		endpoint = envEndpoint
	}
	if u, err := url.Parse(spec); err == nil {
		if e := u.Query().Get("endpoint"); e != "" {
			endpoint = e
		}
	}
	switch {
	case endpoint == "" || strings.Contains(endpoint, ".amazonaws.com"):
		return "aws-s3"
	case strings.Contains(endpoint, "r2.cloudflarestorage.com"):
		return "r2"
	case strings.Contains(endpoint, "backblazeb2.com"):
		return "b2"
	case strings.Contains(endpoint, "wasabisys.com"):
		return "wasabi"
	}
	return ""
}

// dryRunReport is a dry run's one JSON value (and its text report).
type dryRunReport struct {
	DryRun   bool                    `json:"dry-run"` // always true
	Command  string                  `json:"command"` // restore, drill or verify
	Target   string                  `json:"target,omitempty"`
	Archives []*restore.DryRunResult `json:"archives"`
	// Totals over the archives (unique chunks once).
	Chunks       int    `json:"chunks"`
	EncodedBytes uint64 `json:"encoded-bytes"`
	EncodedSizes string `json:"encoded-sizes"`
	GetRequests  int    `json:"get-requests"`
	HeadRequests int    `json:"head-requests"`
	Missing      int    `json:"missing"`
	// Rate is the transfer rate the time is estimated at, in bytes a
	// second, RateSource where it comes from ("assumed (--assume-rate)");
	// without --assume-rate both are zero and no time is estimated.
	Rate       float64 `json:"rate-bytes-per-second"`
	RateSource string  `json:"rate-source"`
	Seconds    float64 `json:"estimated-seconds"`
	// ReadBackBytes, for a drill, are the bytes of the target it reads
	// back against the index after the restore (the whole image).
	ReadBackBytes uint64  `json:"read-back-bytes,omitempty"`
	Cost          dryCost `json:"cost"`
	ExitCode      int     `json:"exit-code"`
}

// dryCost is a dry run's estimated cost in USD.
type dryCost struct {
	Provider string  `json:"provider"`
	Requests float64 `json:"requests-usd"` // the run's GETs
	Egress   float64 `json:"egress-usd"`   // the run's encoded bytes
	Total    float64 `json:"total-usd"`
	Checks   float64 `json:"checks-usd"` // this dry run's HEADs (--check-present)
}

// options returns restore.DryRunOptions for the store flags.
func (f *dryRunFlags) options(sf *storeFlags, pf *pipelineFlags) restore.DryRunOptions {
	return restore.DryRunOptions{Stat: true, CheckPresent: *f.checkPresent, Bucket: sf.remote, Jobs: pf.fetchersFor(sf.fetchSpec())}
}

// finish totals the archives' plans, estimates the time at --assume-rate
// (none without it), prices them and writes the report; chunks missing
// are exit 1.
func (f *dryRunFlags) finish(rep *dryRunReport, sf *storeFlags, stdout io.Writer) error {
	rep.DryRun = true
	sizes := map[string]bool{}
	for _, a := range rep.Archives {
		rep.Chunks += a.Chunks
		rep.EncodedBytes += a.EncodedBytes
		rep.GetRequests += a.GetRequests
		rep.HeadRequests += a.HeadRequests
		rep.Missing += a.Missing
		sizes[a.EncodedSizes] = true
	}
	rep.EncodedSizes = strings.Join(slices.Sorted(func(yield func(string) bool) {
		for k := range sizes {
			if !yield(k) {
				return
			}
		}
	}), "+")
	if *f.assumeRate != "" {
		n, _ := parseSize(strings.TrimSuffix(*f.assumeRate, "/s"))
		rep.Rate, rep.RateSource = float64(n), "assumed (--assume-rate)"
	}
	if rep.Rate > 0 {
		rep.Seconds = float64(rep.EncodedBytes) / rep.Rate
	}
	table, err := f.prices()
	if err != nil {
		return err
	}
	name := *f.provider
	if name == "" {
		name = providerOf(sf.fetchSpec(), sf.s3Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"))
	}
	p, ok := table[name]
	if name == "" {
		p, ok = price{}, true // unknown provider: no cost
	}
	if !ok {
		return usagef("--price-provider %s: not in the price table (%s)", index.DisplayText(name), strings.Join(slices.Sorted(func(yield func(string) bool) {
			for k := range table {
				if !yield(k) {
					return
				}
			}
		}), ", "))
	}
	if name == "" {
		name = "unknown"
	}
	rep.Cost = dryCost{Provider: name, Requests: float64(rep.GetRequests) * p.GetPer1000 / 1000,
		Egress: float64(rep.EncodedBytes) / (1 << 30) * p.EgressPerGB, Checks: float64(rep.HeadRequests) * p.HeadPer1000 / 1000}
	rep.Cost.Total = rep.Cost.Requests + rep.Cost.Egress
	var missing error
	if rep.Missing > 0 {
		rep.ExitCode = exitData
		missing = &dataError{err: fmt.Errorf("dry run: %d chunk(s) to fetch are missing from the store", rep.Missing)}
	}
	if sf.json() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
		return missing
	}
	printDryRun(stdout, rep)
	return missing
}

// printDryRun writes the text report of a dry run.
func printDryRun(w io.Writer, rep *dryRunReport) {
	fmt.Fprintf(w, "dry run of %s: nothing fetched", rep.Command)
	if rep.Target != "" {
		fmt.Fprintf(w, ", nothing written to %s", index.DisplayText(rep.Target))
	}
	fmt.Fprintln(w)
	for _, a := range rep.Archives {
		fmt.Fprintf(w, "  %s/%s: %s, %.1f%% zero (%s never fetched)\n", index.DisplayText(a.Snapshot), index.DisplayText(a.Archive), humanBytes(a.Size), 100*a.ZeroShare, humanBytes(a.ZeroBytes))
		if d := a.Delta; d != nil {
			fmt.Fprintf(w, "    %s: %d of %d chunk positions skipped (%s), %d to write; %d read back, %s of zero ranges to zero\n",
				d.Mode, d.Skipped, d.Positions, humanBytes(d.SkippedBytes), d.Written, d.Checked, humanBytes(d.ZeroedBytes))
		}
		written := ", " + humanBytes(a.WriteBytes) + " written"
		if rep.Command == "verify" {
			written = "" // verify writes nothing
		}
		fmt.Fprintf(w, "    to fetch: %d unique chunks, %s encoded (%s)%s\n", a.Chunks, humanBytes(a.EncodedBytes), a.EncodedSizes, written)
		for _, m := range a.MissingChunks {
			fmt.Fprintf(w, "    MISSING from the store: chunk %s\n", index.DisplayText(m))
		}
	}
	fmt.Fprintf(w, "  total: %d chunks, %s encoded, %d GET requests", rep.Chunks, humanBytes(rep.EncodedBytes), rep.GetRequests)
	if rep.HeadRequests > 0 {
		fmt.Fprintf(w, " (and the %d HEAD requests of this check)", rep.HeadRequests)
	}
	fmt.Fprintln(w)
	if rep.Missing > 0 {
		fmt.Fprintf(w, "  MISSING: %d chunk(s) to fetch are not in the store\n", rep.Missing)
	}
	if rep.ReadBackBytes > 0 {
		fmt.Fprintf(w, "  then read back: the whole target, %s, against the index\n", humanBytes(rep.ReadBackBytes))
	}
	if rep.Rate > 0 {
		fmt.Fprintf(w, "  estimated time: %.1fs at %s/s, %s\n", rep.Seconds, humanBytes(uint64(rep.Rate)), rep.RateSource)
	} else {
		fmt.Fprintf(w, "  estimated time: give --assume-rate RATE (e.g. 100MiB, the store's measured rate) for one\n")
	}
	if rep.Cost.Provider == "unknown" {
		fmt.Fprintf(w, "  estimated cost: unknown for this endpoint (--price-provider NAME, or --price-table FILE with its prices)\n")
		return
	}
	fmt.Fprintf(w, "  estimated cost (%s): $%.4f requests + $%.4f egress = $%.4f", rep.Cost.Provider, rep.Cost.Requests, rep.Cost.Egress, rep.Cost.Total)
	if rep.Cost.Checks > 0 {
		fmt.Fprintf(w, "; this check cost $%.4f", rep.Cost.Checks)
	}
	fmt.Fprintln(w)
}

// dryRunRestore is restore's and drill's --dry-run: the plan of archive of
// snapshot ref into targetPath (a differential one with --base or
// --in-place), fetching no chunk; a file target is checked as the run
// checks it before writing (refusals exit 2); "-" (standard output) is
// the plan of the fetches alone.
func (rc *restoreCmd) dryRunRestore(ctx context.Context, f *dryRunFlags, command, ref, archive, targetPath string, stdout, stderr io.Writer) error {
	sf, pf := &rc.sf, rc.pf
	ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{cryptMode: *rc.cryptMode, requireSig: *rc.requireSig}, pf.fetchersFor(sf.fetchSpec()))
	if err != nil {
		return err
	}
	defer store.Close()
	snap, err := snapshot.Resolve(ctx, store, ns, ref)
	if err != nil {
		return err
	}
	src, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		return err
	}
	o := f.options(sf, pf)
	if targetPath != "-" {
		sink := &filetarget.Sink{Path: targetPath, Options: rc.targetOptions(0)}
		o.Sink = sink
		if o.Delta, err = rc.delta.options(ctx, store, ns, keys, []restore.Sink{sink}, stderr); err != nil {
			return err
		}
		if !filetarget.IsDevice(targetPath) {
			// The checks the run makes of a file target before it
			// writes: refused here as there (exit 2).
			if err := filetarget.CheckWriteFile(targetPath, rc.targetOptions(0)); err != nil {
				return err
			}
		}
	}
	res, err := restore.DryRun(ctx, src, archive, o)
	if errors.Is(err, restore.ErrRefused) {
		return usagef("%s", err.Error())
	}
	if err != nil {
		return err
	}
	rep := &dryRunReport{Command: command, Target: targetPath, Archives: []*restore.DryRunResult{res}}
	if command == "drill" {
		rep.ReadBackBytes = res.Size
	}
	return f.finish(rep, sf, stdout)
}

// dryRun runs restore's or drill's --dry-run when it was given (handled
// true): SNAPSHOT ARCHIVE TARGET as the run would take them, an image
// archive only.
func (rc *restoreCmd) dryRun(ctx context.Context, fs *flag.FlagSet, f *dryRunFlags, command string, stdout, stderr io.Writer) (handled bool, err error) {
	if err := f.check(fs); err != nil || !*f.dryRun {
		return err != nil, err
	}
	archive := index.NormalizeArchiveName(fs.Arg(1))
	if !strings.HasSuffix(archive, ".fidx") {
		return true, usagef("--dry-run plans the restore of a disk image (.img.fidx) into a file, block device or standard output")
	}
	return true, rc.dryRunRestore(ctx, f, command, fs.Arg(0), archive, fs.Arg(2), stdout, stderr)
}

// dryRunVerify is verify's --dry-run: the plan of checking every chunk
// index archive of the selected snapshots (each unique chunk once),
// fetching no chunk.
func dryRunVerify(ctx context.Context, f *dryRunFlags, sf *storeFlags, pf *pipelineFlags, store chunkstore.Store, keys *snapshot.Keys, snaps []index.Snapshot, stdout io.Writer) error {
	o := f.options(sf, pf)
	o.Seen, o.ZeroChunk = map[crypto.Digest]bool{}, true
	rep := &dryRunReport{Command: "verify", Archives: []*restore.DryRunResult{}}
	for _, snap := range snaps {
		src, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
		if err != nil {
			return err
		}
		for _, fi := range src.Manifest().Files {
			if !strings.HasSuffix(fi.Filename, ".fidx") && !strings.HasSuffix(fi.Filename, ".didx") {
				continue
			}
			res, err := restore.DryRun(ctx, src, fi.Filename, o)
			if err != nil {
				return err
			}
			res.WriteBytes = 0 // verify writes nothing
			rep.Archives = append(rep.Archives, res)
		}
	}
	return f.finish(rep, sf, stdout)
}
