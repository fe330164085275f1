package gcsstore

import (
	"fmt"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// TestMapErrNotFound: only storage.ErrObjectNotExist proves an object
// missing; a bucket that does not exist and a 404 naming no object prove
// nothing about the data (outside, exit 3).
func TestMapErrNotFound(t *testing.T) {
	for _, tc := range []struct {
		err     error
		missing bool
	}{
		{fmt.Errorf("reading: %w", storage.ErrObjectNotExist), true},
		{fmt.Errorf("reading: %w", storage.ErrBucketNotExist), false},
		{&googleapi.Error{Code: 404, Message: "Not Found"}, false},
	} {
		err := mapErr(tc.err)
		if chunkstore.Missing(err) != tc.missing || (!tc.missing && (!chunkstore.Outside(err) || chunkstore.Proven(err))) {
			t.Errorf("mapErr(%v) = %v: missing %v, outside %v (want missing %v)", tc.err, err, chunkstore.Missing(err), chunkstore.Outside(err), tc.missing)
		}
	}
}
