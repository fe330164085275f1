package main

import (
	"strings"
	"testing"
)

// TestRepairFromSpecNamed: a malformed bucket URL given to --from is a
// usage error naming --from, not --store.
func TestRepairFromSpecNamed(t *testing.T) {
	for _, spec := range []string{"s3://bkt/./ds1", "s3:/bkt/ds1", "S3://bkt/ds1"} {
		r := mustFail(t, exitUsage, []string{"--from"}, "repair", "--store", t.TempDir(), "--from", spec)
		if strings.Contains(r.err, "--store") {
			t.Errorf("--from %s: the error names --store: %s", spec, r.err)
		}
	}
}
