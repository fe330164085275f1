package bucket

import (
	"path"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// MaxBadCopyKeys is the most keys a backend asks for in the one listing
// that looks for the copies of a chunk kept aside (BadCopyPrefix): far
// more than the chunkstore.MaxBadGenerations a writer makes, so that
// other keys under the prefix cannot hide them, and bounded.
const MaxBadCopyKeys = 100

// BadCopyPrefix returns the key prefix that lists the copies of the chunk
// for d kept aside as damaged: "<chunk key>." (FORMAT.md §8.1: PBS 4 keeps
// them as "<prefix>/.chunks/<4hex>/<digest>.N.bad").
func (k Keys) BadCopyPrefix(d crypto.Digest) string { return k.Chunk(d) + "." }

// BadCopyKey returns the key of the copy name kept aside (a
// chunkstore.BadName), and false when name is not one.
func (k Keys) BadCopyKey(name string) (string, bool) {
	d, ok := chunkstore.ParseBadName(name)
	if !ok {
		return "", false
	}
	return path.Dir(k.Chunk(d)) + "/" + name, true
}

// BadCopyNames returns the names (chunkstore.BadName, generation order,
// each once) of the keys listed under BadCopyPrefix(d) that are copies of
// d kept aside; every other key is ignored.
func (k Keys) BadCopyNames(d crypto.Digest, keys []string) []string {
	dir := path.Dir(k.Chunk(d)) + "/"
	var names []string
	for _, key := range keys {
		name, ok := strings.CutPrefix(key, dir)
		if !ok {
			continue
		}
		if got, ok := chunkstore.ParseBadName(name); ok && got == d && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names) // one digit: lexical order is generation order
	return names
}
