package main

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/pbsdirect/pbsdirect/index"
)

// checkDistinctTargets refuses (usage error, exit 2: "two disks go to
// X") two disks whose targets are one file or device under different
// names: the same cleaned absolute path (its directory's links resolved),
// or, for targets already there (followed through symbolic links), the
// same device and inode — for block devices, the same device number
// (st_rdev), so that two device nodes or a link to one are caught. It
// changes nothing and opens nothing.
func checkDistinctTargets(targets []string) error {
	type id struct{ dev, ino uint64 }
	paths := map[string]string{}
	ids := map[id]string{}
	for _, t := range targets {
		p := t
		if a, err := filepath.Abs(t); err == nil {
			p = a
		}
		p = filepath.Clean(p)
		if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(d, filepath.Base(p)) // a new file's directory named through a link
		}
		if first, dup := paths[p]; dup {
			return twoDisks(first, t)
		}
		paths[p] = t
		st, err := os.Stat(t)
		if err != nil {
			continue
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		k := id{dev: uint64(sys.Dev), ino: sys.Ino}
		if st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0 {
			k = id{dev: uint64(sys.Rdev), ino: 0} // the block device itself, whatever node names it
		}
		if first, dup := ids[k]; dup {
			return twoDisks(first, t)
		}
		ids[k] = t
	}
	return nil
}

// twoDisks is the usage error of two disks going to one target, named
// first and second on the command line.
func twoDisks(first, second string) error {
	if first == second {
		return usagef("two disks go to %s: give each its own --map", index.DisplayText(first))
	}
	return usagef("two disks go to %s (also named %s): give each its own --map", index.DisplayText(first), index.DisplayText(second))
}
