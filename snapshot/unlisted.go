package snapshot

import (
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// unlisted collects the entries a listing leaves out because their names
// are no snapshot, group or namespace name (junk in the datastore, keys a
// service encoded without saying so), to say so in one warning.
type unlisted struct {
	seen  map[string]bool
	first string // the first entry seen
}

// add records entry, a datastore-relative path; each is counted once.
func (u *unlisted) add(entry string) {
	if u.seen[entry] {
		return
	}
	if u.seen == nil {
		u.seen = map[string]bool{}
		u.first = entry
	}
	u.seen[entry] = true
}

// warn has store say (chunkstore.Warn) how many entries below dir were
// left out and names the first; what says what they should have named.
// Nothing is said when none were; a listing of dir repeated in one run
// says it once.
func (u *unlisted) warn(store chunkstore.Store, dir, what string) {
	n := len(u.seen)
	if n == 0 {
		return
	}
	count, verb, left := fmt.Sprintf("%d entries", n), "name", "are"
	if n == 1 {
		count, verb, left = "1 entry", "names", "is"
	}
	chunkstore.Warn(store, "unlisted\x00"+dir, fmt.Sprintf(
		"pbsdirect: warning: %s: %s under %s/ %s no %s and %s left out of the listing, e.g. %q",
		store, count, dir, verb, what, left, u.first))
}

// hidden reports whether any component of the slash-separated path rel
// starts with a dot: lock files, markers (".namespace", ".protected") and
// other names PBS keeps out of its listings.
func hidden(rel string) bool {
	for _, p := range strings.Split(rel, "/") {
		if strings.HasPrefix(p, ".") {
			return true
		}
	}
	return false
}

// groupFile reports whether name is a file PBS keeps in a group directory
// (§1.3): "owner", "notes", or the temporary file of an atomic replace of
// one of them ("owner.tmp_XXXXXX").
func groupFile(name string) bool {
	base, _, _ := strings.Cut(name, ".tmp_")
	return base == "owner" || base == "notes"
}

// snapshotEntry returns the entry of the type directory typeDir
// ("[ns/<a>/…]vm") that file rel (datastore-relative, below typeDir) is
// or belongs to, for a file whose directory does not parse as a snapshot
// directory: a file where none belongs ("vm/junk", "vm/100/junk"), the
// snapshot directory whose ID or time is not valid ("vm/100/<time>"), a
// directory inside a snapshot directory. ok is false for names PBS keeps
// there and ignores itself (hidden files, a group's owner and notes).
func snapshotEntry(typeDir, rel string) (entry string, ok bool) {
	rest := strings.TrimPrefix(rel, typeDir+"/")
	if hidden(rest) {
		return "", false
	}
	parts := strings.Split(rest, "/")
	n := len(parts)
	switch {
	case n == 2 && groupFile(parts[1]):
		return "", false
	case n == 3:
		n = 2 // <id>/<time>/<file>: the snapshot directory
	case n > 3:
		n = 3 // <id>/<time>/<dir>/…: the directory in it
	}
	return typeDir + "/" + strings.Join(parts[:n], "/"), true
}
