package main

import (
	"fmt"
	"io"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
)

// bucketRequests returns the request and connection counts of store when
// it is a bucket or a chain with one (backends.PolicyStatsOf), nil for a
// directory.
func bucketRequests(store chunkstore.Store) *bucket.Stats {
	if _, ok := backends.LayoutOf(store); !ok {
		return nil
	}
	q := backends.PolicyStatsOf(store)
	return &q
}

// printConnections prints the line of a report that counts the bucket
// connections; nothing without a bucket (q nil) or a connection.
func printConnections(w io.Writer, q *bucket.Stats) {
	if q == nil || q.Connections.Opened == 0 {
		return
	}
	c := q.Connections
	fmt.Fprintf(w, "  bucket connections: %d opened (at most %d open at once), %d requests on a reused connection\n", c.Opened, c.PeakOpen, c.Reused)
}
