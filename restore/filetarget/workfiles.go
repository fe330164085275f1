package filetarget

import (
	"path/filepath"
	"strings"
)

// WorkFiles returns the paths of what a restore to the file target keeps
// beside it while it runs and for a resume: its partial output
// (".NAME.pbsdirect-partial") and its journal (".NAME.pbsdirect-journal";
// rewritten under that name plus ".new"). Names too long for the file
// system are shortened as the restore shortens them.
func WorkFiles(target string) (partial, journal string) {
	abs, err := filepath.Abs(target)
	if err != nil {
		abs = filepath.Clean(target)
	}
	dir, name := filepath.Split(abs)
	journal = filepath.Join(dir, strings.TrimSuffix(sideName(name, ".pbsdirect-journal.new"), ".new"))
	return filepath.Join(dir, partialName(name)), journal
}

// WorkFileKind says whether path is named as a restore's working file
// beside its target: "partial output" (".NAME.pbsdirect-partial"),
// "journal" (".NAME.pbsdirect-journal", or that and ".new"), or "" for
// any other name. Such a name is never a target of its own: writing it
// would take over another restore's work.
func WorkFileKind(path string) string {
	name := filepath.Base(path)
	if !strings.HasPrefix(name, ".") {
		return ""
	}
	switch {
	case strings.HasSuffix(name, partialSuffix):
		return "partial output"
	case strings.HasSuffix(name, ".pbsdirect-journal"), strings.HasSuffix(name, ".pbsdirect-journal.new"):
		return "journal"
	}
	return ""
}
