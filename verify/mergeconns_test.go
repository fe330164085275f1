package verify_test

import (
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestMergeBucketRequests: the merged report of shards that read a bucket
// sums their request and connection counts; shards without them (a
// directory) leave them out.
func TestMergeBucketRequests(t *testing.T) {
	report := func(shard string, q *bucket.Stats) verify.Report {
		return verify.Report{Version: verify.ReportVersion, Store: "s3://b/ds", Shard: shard, Started: "2026-11-02T01:00:00Z", OK: true, Requests: q}
	}
	a := &bucket.Stats{Retries: 1, Connections: bucket.ConnStats{Opened: 33, Reused: 100, PeakOpen: 32}}
	b := &bucket.Stats{Retries: 2, Connections: bucket.ConnStats{Opened: 5, Reused: 7, PeakOpen: 5}}
	m, err := verify.Merge([]verify.Report{report("0/2", a), report("1/2", b)})
	if err != nil {
		t.Fatal(err)
	}
	want := bucket.ConnStats{Opened: 38, Reused: 107, PeakOpen: 37}
	if m.Requests == nil || m.Requests.Connections != want || m.Requests.Retries != 3 {
		t.Errorf("merged bucket-requests %+v, want connections %+v and 3 retries", m.Requests, want)
	}
	if a.Connections.Opened != 33 {
		t.Errorf("merging changed a shard's report: %+v", a)
	}
	m, err = verify.Merge([]verify.Report{report("0/2", nil), report("1/2", nil)})
	if err != nil || m.Requests != nil {
		t.Errorf("directory shards merged into bucket-requests %+v (%v)", m.Requests, err)
	}
}
