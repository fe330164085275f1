package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// maxReportSize bounds a report file read by report merge.
const maxReportSize = 1 << 30

func cmdReportMerge(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.registerOutput(fs)
	fs.StringVar(&sf.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL for s3:// reports")
	fs.StringVar(&sf.s3Region, "s3-region", "", "S3 region for s3:// reports")
	fs.StringVar(&sf.s3PathStyle, "s3-path-style", "auto", "S3 addressing: auto, true (also bare --s3-path-style) or false")
	fs.Lookup("s3-path-style").NoOptDefVal = "true"
	out := fs.String("report", "", "also write the merged JSON report here (PATH, s3://bucket/key or gs://bucket/key)")
	var metrics metricsFlags
	metrics.register(fs, "verify")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() == 0 {
			return usagef("want one or more report files")
		}
		if err := checkOutputFormat(sf.outputFormat); err != nil {
			return err
		}
		if err := checkOutputPath("--report", *out); err != nil {
			return err
		}
		if err := metrics.check(fs); err != nil {
			return err
		}
		var reps []verify.Report
		for _, loc := range fs.Args() {
			b, err := readLocation(ctx, &sf, loc, maxReportSize)
			if errors.Is(err, chunkstore.ErrNotFound) {
				// A report named that is not there: the command line is wrong.
				return usageOf(err)
			}
			if err != nil {
				return err
			}
			var r verify.Report
			if err := json.Unmarshal(b, &r); err != nil {
				// A file named that is not a report: the command line is wrong.
				return usagef("%s: not a verify report: %v", loc, err)
			}
			reps = append(reps, r)
		}
		rep, err := verify.Merge(reps, fs.Args()...)
		if err != nil {
			// Reports that are not the shards of one run (the same shard
			// twice, other counts, another run's): the files named are wrong.
			return usageOf(err)
		}
		if !sf.json() {
			for _, s := range rep.Snapshots {
				s.WriteText(stdout)
			}
		}
		// Exit like the single run would have: the merged reports' worst code
		// outside the data (3) stays, damage is 1.
		var outside error
		if err := verify.Incomplete(rep, reps); err != nil {
			outside = &outsideError{err}
		}
		return printVerifyReport(ctx, stdout, &rep, sf.json(), outside, func() error {
			if metrics.set() {
				// The merged run's metrics, as one unsharded run's
				// (retries are in the shards' reports, not counted here).
				if err := metrics.verifyMetrics(ctx, &sf, rep, nil); err != nil {
					return err
				}
			}
			if *out == "" {
				return nil
			}
			b, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				return err
			}
			if err := writeLocation(ctx, &sf, *out, append(b, '\n')); err != nil {
				return fmt.Errorf("--report: %w", err)
			}
			return nil
		})
	}
}

// reportCommand is 'pbsdirect report'.
func reportCommand() commandSpec {
	return commandSpec{
		use:   "report COMMAND",
		short: "merge the JSON reports of verify shards",
		long: `Work with the JSON reports that verify writes (--report): merge the reports
of verify shards into one.`,
		example: `  pbsdirect report merge shard-*.json`,
		sub:     []commandSpec{reportMergeCommand()},
	}
}

// reportMergeCommand is 'pbsdirect report merge'.
func reportMergeCommand() commandSpec {
	return commandSpec{
		use:   "merge [flags] FILE... (PATH, s3://bucket/key or gs://bucket/key)",
		short: "merge the JSON reports of verify shards into one",
		long: `Merge the JSON reports of verify shards (verify --shard I/N --report FILE) into
one report, ok only when every shard's is and every shard saw the same
snapshots (a snapshot only some shards saw is not verified: exit 3).`,
		example: `  pbsdirect report merge --output-format json-pretty shard-*.json
  pbsdirect report merge --report s3://reports/all.json s3://reports/shard-1.json s3://reports/shard-2.json`,
		build: cmdReportMerge,
	}
}
