package backup

import (
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// TestStampedBefore: on a store stamping whole seconds, a chunk counts as
// written before the manifest when its second is earlier, or, in the
// manifest's second, when both carry the writer's time and the chunk's is
// earlier; never without both writer's times.
func TestStampedBefore(t *testing.T) {
	sec := time.Date(2026, 12, 3, 10, 0, 7, 0, time.UTC)
	w := func(ms int) time.Time { return sec.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name            string
		chunk, manifest chunkstore.Stamp
		want            bool
	}{
		{"second-before", chunkstore.Stamp{Server: sec.Add(-time.Second)}, chunkstore.Stamp{Server: sec}, true},
		{"second-before-writer-reversed", chunkstore.Stamp{Server: sec.Add(-time.Second), Writer: w(900)}, chunkstore.Stamp{Server: sec, Writer: w(100)}, true},
		{"second-after", chunkstore.Stamp{Server: sec.Add(time.Second), Writer: w(100)}, chunkstore.Stamp{Server: sec, Writer: w(900)}, false},
		{"same-second-writer-ordered", chunkstore.Stamp{Server: sec, Writer: w(100)}, chunkstore.Stamp{Server: sec, Writer: w(900)}, true},
		{"same-second-fractions-writer-ordered", chunkstore.Stamp{Server: w(800), Writer: w(100)}, chunkstore.Stamp{Server: w(200), Writer: w(900)}, true},
		{"same-second-writer-reversed", chunkstore.Stamp{Server: sec, Writer: w(900)}, chunkstore.Stamp{Server: sec, Writer: w(100)}, false},
		{"same-second-writer-equal", chunkstore.Stamp{Server: sec, Writer: w(500)}, chunkstore.Stamp{Server: sec, Writer: w(500)}, false},
		{"same-second-no-writer", chunkstore.Stamp{Server: sec}, chunkstore.Stamp{Server: sec}, false},
		{"same-second-chunk-without-writer", chunkstore.Stamp{Server: sec}, chunkstore.Stamp{Server: sec, Writer: w(900)}, false},
		{"same-second-manifest-without-writer", chunkstore.Stamp{Server: sec, Writer: w(100)}, chunkstore.Stamp{Server: sec}, false},
	} {
		if got := stampedBefore(c.chunk, c.manifest, time.Second); got != c.want {
			t.Errorf("%s: stampedBefore = %v, want %v", c.name, got, c.want)
		}
	}
}
