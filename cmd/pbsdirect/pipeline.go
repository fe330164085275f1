package main

import (
	"os"
	"runtime"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/restore"
)

// DefaultRemoteFetchers is the default number of chunk GETs in flight for a
// bucket: enough to hide tens of milliseconds of request latency.
const DefaultRemoteFetchers = 32

// pipelineFlags are the restore/verify pipeline's tuning flags.
type pipelineFlags struct {
	fs       *flag.FlagSet
	jobs     int
	writers  int // -1 for commands that write nothing (verify)
	fetchers int
}

// registerPipelineFlags adds --jobs and --fetchers to fs, and --writers for
// a command that writes a target.
func registerPipelineFlags(fs *flag.FlagSet, writes bool) *pipelineFlags {
	p := &pipelineFlags{fs: fs, writers: -1}
	fs.IntVarP(&p.jobs, "jobs", "j", restore.DefaultJobs(), "chunks decoded at once (CRC, AES-GCM, zstd, SHA-256: CPU bound), one per core")
	manDefault(fs, "jobs", "", "the number of cores")
	if writes {
		fs.IntVar(&p.writers, "writers", restore.DefaultWriters(restore.DefaultJobs()), "chunks written at once while the jobs decode on, max(4, jobs/2); 0: each job writes its own chunk (--jobs 1 --writers 0 is the sequential restore)")
		manDefault(fs, "writers", "", "max(4, jobs/2)")
	}
	ahead := "jobs + writers"
	if !writes {
		ahead = "jobs + max(4, jobs/2)"
	}
	fs.IntVar(&p.fetchers, "fetchers", 0, "chunk reads in flight ahead of the jobs (default: "+ahead+" for a directory, 32 for a bucket)")
	return p
}

// check validates the parsed flags and fills in the default writers for
// the --jobs given.
func (p *pipelineFlags) check() error {
	if p.jobs < 1 || p.jobs > 1024 {
		return usagef("--jobs must be 1..1024, not %d", p.jobs)
	}
	if p.fs.Lookup("writers") != nil {
		if !p.fs.Changed("writers") {
			p.writers = restore.DefaultWriters(p.jobs)
		}
		if p.writers < 0 || p.writers > 1024 {
			return usagef("--writers must be 0..1024, not %d", p.writers)
		}
	}
	if p.fetchers < 0 || p.fetchers > 4096 {
		return usagef("--fetchers must be 1..4096 (0: the default), not %d", p.fetchers)
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
	if p.writers < 0 { // verify: read ahead as far as a restore would
		return p.jobs + restore.DefaultWriters(p.jobs)
	}
	return p.jobs + p.writers
}

// options returns pipeline options for store.
func (p *pipelineFlags) options(store string) restore.Options {
	return restore.Options{Jobs: p.jobs, Writers: max(p.writers, 0), Fetchers: p.fetchersFor(store)}
}

// raiseProcs makes GOMAXPROCS at least jobs + writers, unless the GOMAXPROCS
// environment variable sets it, and returns the function that puts it back.
// A goroutine blocked in a system call, such as a writer's O_DIRECT write
// waiting for the disk, keeps its P until the runtime's monitor takes it
// back, 20 µs to 10 ms later; with a P for every job and every writer the
// jobs always have theirs. Measured on 2 cores (bench/README.md).
func raiseProcs(opts restore.Options) (restoreProcs func()) {
	prev := runtime.GOMAXPROCS(0)
	if n := opts.Jobs + opts.Writers; n > prev && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(n)
		return func() { runtime.GOMAXPROCS(prev) }
	}
	return func() {}
}
