package main

import (
	flag "github.com/spf13/pflag"

	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/metrics"
	"github.com/pbsdirect/pbsdirect/verify"
)

// metricsPushTimeout bounds each request to the Pushgateway (read back,
// push).
const metricsPushTimeout = 30 * time.Second

// metricsFlags are where a verify or drill run's metrics go: a textfile
// (a local path or a bucket object) and a Prometheus Pushgateway.
type metricsFlags struct {
	textfile, push, job, instance string
	// started is when check ran, the start of the run (for its
	// duration).
	started time.Time
	// pushed is the Pushgateway group's series read back by reach
	// before the work (pushRead set), used in place of a read back at
	// the end.
	pushed   metrics.Previous
	pushRead bool
}

// register adds the metrics flags; what is the command ("verify",
// "drill"), the default job label.
func (m *metricsFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&m.textfile, "metrics-textfile", "", "write Prometheus metrics for the node_exporter textfile collector here (PATH.prom, s3://bucket/key or gs://bucket/key); the last-success times are carried over from it")
	fs.StringVar(&m.push, "metrics-push", "", "push Prometheus metrics to this Pushgateway (URL), replacing the group of --metrics-job and --metrics-instance; the last-success times are read back from it first")
	fs.StringVar(&m.job, "metrics-job", "pbsdirect_"+what, "with --metrics-push: the job label of the group")
	fs.StringVar(&m.instance, "metrics-instance", "", "with --metrics-push: the instance label of the group (default: --store as given, the same every run)")
}

// check refuses, before any work, a textfile that cannot be written
// where it is named and a push URL that is not http(s) or has a query or
// fragment (the Pushgateway's API paths are added to it); -job and
// -instance need --metrics-push. It is called first: the run starts.
func (m *metricsFlags) check(fs *flag.FlagSet) error {
	m.started = time.Now()
	if err := checkOutputPath("--metrics-textfile", m.textfile); err != nil {
		return err
	}
	if m.push == "" {
		if fs.Changed("metrics-job") || fs.Changed("metrics-instance") {
			return usagef("--metrics-job and --metrics-instance are for --metrics-push")
		}
		return nil
	}
	if u, err := url.Parse(m.push); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--metrics-push %s: want an http:// or https:// URL of a Pushgateway", m.push)
	} else if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return usagef("--metrics-push %s: want the Pushgateway's URL without a query or fragment (?, #)", u.Redacted())
	}
	if m.job == "" {
		return usagef("--metrics-job must not be empty")
	}
	return nil
}

// group is the Pushgateway group of a run on store: the job, the
// instance (default store) and, for a verify shard, the shard, so that
// shards do not replace each other's metrics.
func (m *metricsFlags) group(store, shard string) metrics.Group {
	g := metrics.Group{URL: m.push, Job: m.job, Grouping: map[string]string{"instance": store},
		Client: &http.Client{Timeout: metricsPushTimeout}}
	if m.instance != "" {
		g.Grouping["instance"] = m.instance
	}
	if shard != "" {
		g.Grouping["shard"] = shard
	}
	return g
}

// deliver writes the metrics build makes (given the previous run's
// series, whose last-success times it carries over) to the textfile and
// pushes them, each from its own previous series. A failure is an
// *outsideError naming the flag (exit 3, no damage).
func (m *metricsFlags) deliver(ctx context.Context, sf *storeFlags, store, shard string, build func(prev metrics.Previous) *prometheus.Registry) error {
	var errs []error
	if m.textfile != "" {
		if err := m.writeTextfile(ctx, sf, build); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-textfile: %w", err))
		}
	}
	if m.push != "" {
		g := m.group(store, shard)
		prev, err := m.pushed, error(nil)
		if !m.pushRead {
			prev, err = g.Pushed(ctx)
		}
		if err == nil {
			err = g.Push(ctx, build(prev))
		} else {
			// Pushing without the previous series would lose the last
			// success times: not pushed.
			err = fmt.Errorf("reading back the metrics pushed before (not pushed): %w", err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--metrics-push: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &outsideError{err}
	}
	return nil
}

// writeTextfile replaces the textfile with build's metrics; the previous
// series come from the file it replaces (none when it is missing or does
// not parse).
func (m *metricsFlags) writeTextfile(ctx context.Context, sf *storeFlags, build func(metrics.Previous) *prometheus.Registry) error {
	var prev metrics.Previous
	b, err := readLocation(ctx, sf, m.textfile, metrics.MaxPrevious)
	switch {
	case err == nil:
		prev, _ = metrics.ParsePrevious(bytes.NewReader(b), nil) // not metrics: nothing carried over
	case !errors.Is(err, chunkstore.ErrNotFound):
		return fmt.Errorf("reading the previous run's metrics: %w", err)
	}
	text, err := metrics.Text(build(prev))
	if err != nil {
		return err
	}
	return writeLocation(ctx, sf, m.textfile, text)
}

// reach reads back, before the work, what the metrics of a run on store
// are delivered from: the Pushgateway group's series (kept for deliver)
// and the textfile (a bucket object or a file; missing is fine), so that
// a Pushgateway or bucket that cannot be reached fails the run before it
// starts: an *outsideError naming the flag (exit 3).
func (m *metricsFlags) reach(ctx context.Context, sf *storeFlags, store string) error {
	if m.textfile != "" {
		if _, err := readLocation(ctx, sf, m.textfile, metrics.MaxPrevious); err != nil && !errors.Is(err, chunkstore.ErrNotFound) {
			return &outsideError{fmt.Errorf("--metrics-textfile: reading the previous run's metrics (nothing drilled): %w", err)}
		}
	}
	if m.push != "" {
		prev, err := m.group(store, "").Pushed(ctx)
		if err != nil {
			return &outsideError{fmt.Errorf("--metrics-push: reading back the metrics pushed before (nothing drilled): %w", err)}
		}
		m.pushed, m.pushRead = prev, true
	}
	return nil
}

// set reports whether any metrics are asked for.
func (m *metricsFlags) set() bool { return m.textfile != "" || m.push != "" }

// verifyMetrics delivers a verify run's metrics (metrics.Verify), with
// the requests store retried.
func (m *metricsFlags) verifyMetrics(ctx context.Context, sf *storeFlags, rep verify.Report, store chunkstore.Store) error {
	var retries int64
	if store != nil {
		retries = backends.RetriesOf(store)
	}
	now := time.Now()
	return m.deliver(ctx, sf, rep.Store, rep.Shard, func(prev metrics.Previous) *prometheus.Registry {
		return metrics.Verify(rep, retries, now, prev)
	})
}

// drillMetrics delivers the metrics of a drill run of store (one archive
// or a fleet; metrics.Drills); an item an interrupted fleet drill did not
// drill (Report.NotRun) is left out.
func (m *metricsFlags) drillMetrics(ctx context.Context, sf *storeFlags, store string, reps []drill.Report) error {
	var runs []metrics.Drill
	for _, r := range reps {
		if r.NotRun {
			continue
		}
		d := metrics.Drill{Snapshot: r.Snapshot, Archive: r.Archive, OK: r.OK}
		if r.Restore != nil {
			d.Restored, d.Bytes, d.Chunks, d.Retries = true, r.Restore.Size, r.Restore.ChunksFetched, r.Restore.Retries
			d.RestoreSeconds = r.RestoreSeconds
		}
		if r.Boot != nil {
			d.Booted = &r.Boot.OK
		}
		runs = append(runs, d)
	}
	now := time.Now()
	return m.deliver(ctx, sf, store, "", func(prev metrics.Previous) *prometheus.Registry {
		return metrics.Drills(store, runs, now.Sub(m.started).Seconds(), now, prev)
	})
}
