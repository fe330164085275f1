package main

import (
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/restore"
)

// DefaultRemoteFetchers is the default number of chunk GETs in flight for a
// bucket: enough to hide tens of milliseconds of request latency.
const DefaultRemoteFetchers = 32

// pipelineFlags are the restore/verify pipeline's tuning flags.
type pipelineFlags struct {
	jobs     int
	fetchers int
}

func registerPipelineFlags(fs *flag.FlagSet) *pipelineFlags {
	p := &pipelineFlags{}
	fs.IntVarP(&p.jobs, "jobs", "j", restore.DefaultJobs(), "chunks worked on at once: each job decodes (CRC, AES-GCM, zstd, SHA-256), verifies and writes one chunk at a time; 1 = sequential restore")
	fs.IntVar(&p.fetchers, "fetchers", 0, "chunk reads in flight ahead of the jobs (default: jobs for a directory, 32 for a bucket)")
	return p
}

func (p *pipelineFlags) check() error {
	if p.jobs < 1 || p.jobs > 1024 {
		return usagef("--jobs must be 1..1024, not %d", p.jobs)
	}
	if p.fetchers < 0 || p.fetchers > 4096 {
		return usagef("--fetchers must be 1..4096, not %d", p.fetchers)
	}
	return nil
}

// isRemote reports whether store is a bucket URL.
func isRemote(store string) bool { return backends.IsRemote(store) }

// fetchersFor returns the number of reads in flight for store.
func (p *pipelineFlags) fetchersFor(store string) int {
	switch {
	case p.fetchers > 0:
		return p.fetchers
	case isRemote(store):
		return DefaultRemoteFetchers
	}
	return p.jobs
}

// options returns pipeline options for store.
func (p *pipelineFlags) options(store string) restore.Options {
	return restore.Options{Jobs: p.jobs, Fetchers: p.fetchersFor(store)}
}
