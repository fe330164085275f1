package restore

import (
	"testing"
	"time"
)

// TestSummaryNoRateForNoWork: a resume that found every chunk on the
// target fetched and wrote nothing: its summary has no rate (0), not the
// image's size over the moment it took; one that did work has one.
func TestSummaryNoRateForNoWork(t *testing.T) {
	plan := NewPlan(1<<30, 4<<20, nil)
	for _, c := range []struct {
		name    string
		fetched uint64
		want    bool
	}{{"nothing fetched", 0, false}, {"chunks fetched", 3, true}} {
		stats := &Stats{}
		stats.Fetched.Store(c.fetched)
		stats.DataBytes.Store(c.fetched * (4 << 20))
		res := &Result{Plan: plan, Stats: stats, Resumed: 256}
		sum := res.Summary(time.Millisecond)
		if (sum.MiBps > 0) != c.want || (sum.DataMiBps > 0) != c.want {
			t.Errorf("%s: %.1f MiB/s (data %.1f), want a rate: %v", c.name, sum.MiBps, sum.DataMiBps, c.want)
		}
	}
}
