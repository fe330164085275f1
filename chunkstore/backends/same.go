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
// scheme, bucket and prefix are the same ("s3://b/p/" is "s3://b/p") and
// so is the endpoint parameter of their own settings (none: the command
// line's, the same for both).
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
		ba, pa, erra := bucket.ParseURL(sa.name, BaseSpec(a))
		bb, pb, errb := bucket.ParseURL(sb.name, BaseSpec(b))
		return erra == nil && errb == nil && ba == bb && pa == pb && endpointOf(sa, a) == endpointOf(sb, b)
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

// endpointOf returns the endpoint that spec's own settings name for a
// store of backend b ("" for none, or settings that do not parse).
func endpointOf(b scheme, spec string) string {
	_, o, err := b.settle(spec, Options{})
	if err != nil {
		return ""
	}
	return o.S3.Endpoint + o.GCS.Endpoint
}
