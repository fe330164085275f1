package backends

import (
	"os"
	"path/filepath"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
)

// SameStore reports whether the store specifications a and b name the
// same datastore, whatever the spelling: two directories are the same when
// their roots are the same directory (device and inode, so "./ds/", a
// symbolic link or a bind mount to it match; when either cannot be
// stat'ed, their cleaned absolute paths are compared); two buckets when
// scheme, bucket and prefix are the same ("s3://b/p/" is "s3://b/p"; every
// store of one run has the same endpoint and credentials).
// A directory is never a bucket's store.
func SameStore(a, b string) bool {
	sa, ra := schemeOf(a)
	sb, rb := schemeOf(b)
	if ra != rb {
		return false
	}
	if ra {
		if sa.name != sb.name {
			return false
		}
		ba, pa, erra := bucket.ParseURL(sa.name, a)
		bb, pb, errb := bucket.ParseURL(sb.name, b)
		return erra == nil && errb == nil && ba == bb && pa == pb
	}
	fa, erra := os.Stat(a)
	fb, errb := os.Stat(b)
	if erra == nil && errb == nil {
		return os.SameFile(fa, fb)
	}
	absA, erra := filepath.Abs(a)
	absB, errb := filepath.Abs(b)
	return erra == nil && errb == nil && absA == absB
}
