package main

import (
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/verify"
)

// scopeFlags are the namespace-tree flags of the commands that work on
// many snapshots (verify, a fleet drill): --max-depth and
// --all-namespaces, resolved by verify.Select.
type scopeFlags struct {
	maxDepth *int
	allNS    *bool
	does     string // what the command does, for messages: "verifies", "drills"
}

// registerScopeFlags adds --max-depth and --all-namespaces to fs; verb
// and does name what the command does to the snapshots ("verify",
// "verifies").
func registerScopeFlags(fs *flag.FlagSet, verb, does string) *scopeFlags {
	return &scopeFlags{
		maxDepth: fs.Int("max-depth", 0, "also "+verb+" child namespaces down to this many levels below --ns (as proxmox-backup-client)"),
		allNS:    fs.Bool("all-namespaces", false, verb+" the whole store: every namespace at any depth"),
		does:     does,
	}
}

// check refuses what cannot go together: a depth outside 0..7,
// --all-namespaces with a SNAPSHOT or group (ref), --ns or --max-depth,
// and --max-depth with a ref (usage errors).
func (s *scopeFlags) check(fs *flag.FlagSet, ns, ref string) error {
	if *s.maxDepth < 0 || *s.maxDepth > 7 {
		return usagef("--max-depth must be 0..7, not %d", *s.maxDepth)
	}
	if *s.allNS && (ref != "" || ns != "" || fs.Changed("max-depth")) {
		return usagef("--all-namespaces %s the whole store: no SNAPSHOT, --ns or --max-depth with it", s.does)
	}
	if ref != "" && fs.Changed("max-depth") {
		return usagef("--max-depth is for namespaces, not with a SNAPSHOT or group")
	}
	return nil
}

// changed reports whether either flag was given.
func (s *scopeFlags) changed(fs *flag.FlagSet) bool {
	return fs.Changed("max-depth") || fs.Changed("all-namespaces")
}

// scope returns sc with the depth these flags give (--all-namespaces:
// every level).
func (s *scopeFlags) scope(sc verify.Scope) verify.Scope {
	sc.MaxDepth = *s.maxDepth
	if *s.allNS {
		sc.MaxDepth = -1
	}
	return sc
}
