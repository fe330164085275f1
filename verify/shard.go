package verify

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Shard is one of Count disjoint parts of a store's chunks: shard Index
// (0 ≤ Index < Count) holds the chunks whose digest, its first 8 bytes
// read as a big-endian unsigned integer, leaves remainder Index when
// divided by Count. Digests are SHA-256 values, so every shard gets about
// 1/Count of the chunks, and the same chunk is in the same shard for every
// snapshot, archive and run. The zero Shard (Count 0 or 1) holds every
// chunk.
type Shard struct {
	Index, Count int
}

// Of returns the shard index of digest d among n shards.
func Of(d crypto.Digest, n int) int {
	return int(binary.BigEndian.Uint64(d[:8]) % uint64(n))
}

// Has reports whether chunk digest d belongs to shard s.
func (s Shard) Has(d crypto.Digest) bool {
	return s.Count <= 1 || Of(d, s.Count) == s.Index
}

// String returns "I/N", or "" for the whole store.
func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// IndexEnv lists the environment variables "auto/N" takes the shard index
// from, in order: Kubernetes Indexed Jobs, AWS Batch array jobs, Google
// Cloud Batch.
var IndexEnv = []string{"JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX", "BATCH_TASK_INDEX"}

// ParseShard parses "I/N" (0 ≤ I < N ≤ 65536) or "auto/N", which takes I
// from the first variable of IndexEnv that getenv returns non-empty.
func ParseShard(spec string, getenv func(string) string) (Shard, error) {
	is, ns, ok := strings.Cut(spec, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N or auto/N", spec)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 || n > 65536 {
		return Shard{}, fmt.Errorf("shard %q: N must be 1..65536", spec)
	}
	if is == "auto" {
		for _, e := range IndexEnv {
			if v := getenv(e); v != "" {
				is = v
				break
			}
		}
		if is == "auto" {
			return Shard{}, fmt.Errorf("shard %q: none of %s is set", spec, strings.Join(IndexEnv, ", "))
		}
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: index %q must be 0..%d", spec, is, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}
