package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
)

// MaxShardSpread is how far apart the start times of the reports Merge
// takes may be: shards of one nightly run start within it, last night's
// report left beside tonight's does not.
const MaxShardSpread = 12 * time.Hour

// Merge merges the reports of the shards of one run (the same store and
// scope, each with --shard I/N of the same N) into the report one unsharded
// run would have written (but for which archive a shared chunk is credited
// to as checked, which depends on scheduling): per archive the chunk counts
// added up and the
// damaged chunks of all shards, counts and OK recomputed, Started the
// earliest, Finished the latest, Seconds the longest shard's, Host every
// host. Reports of another version, another store, other namespaces or
// another shard count, the same shard twice, or reports started more than
// MaxShardSpread apart, are refused. A merge of only some of the N shards
// keeps Shard as the list of those merged ("0,2/3") and is not OK: the
// missing shards' chunks were not checked. A snapshot that only some of the
// reports list (a backup or prune between the shards' runs) is not
// verified: it fails, with an error naming the shards that saw it, and is
// listed in NotVerified; one that a shard skipped as removed while running
// is skipped in the merge too; the archives of a snapshot not verified
// are not OK and marked NotVerified (those not found damaged).
//
// names, when given, names each report (its file) in the errors, which
// otherwise say "report N" (N from 1).
func Merge(reports []Report, names ...string) (Report, error) {
	if len(reports) == 0 {
		return Report{}, fmt.Errorf("no reports to merge")
	}
	label := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return "report " + strconv.Itoa(i+1)
	}
	out := Report{Version: ReportVersion, OK: true, Store: reports[0].Store, Snapshots: []SnapshotResult{}}
	n := -1
	seen := map[int]bool{}
	var hosts, nss []string
	var started, finished time.Time
	for i, r := range reports {
		if r.Version != ReportVersion {
			return out, fmt.Errorf("%s: version %d, want %d", label(i), r.Version, ReportVersion)
		}
		if r.Store != out.Store {
			return out, fmt.Errorf("%s: store %q, not %q", label(i), r.Store, out.Store)
		}
		if !slices.Equal(r.Namespaces, reports[0].Namespaces) {
			return out, fmt.Errorf("%s: namespaces %q, not %q: not a shard of the same run", label(i), r.Namespaces, reports[0].Namespaces)
		}
		if t0, err0 := time.Parse(time.RFC3339, reports[0].Started); err0 == nil {
			if t, err := time.Parse(time.RFC3339, r.Started); err == nil && (t.Sub(t0) > MaxShardSpread || t0.Sub(t) > MaxShardSpread) {
				return out, fmt.Errorf("%s: started %s, more than %v from %s (%s): not a shard of the same run", label(i), r.Started, MaxShardSpread, label(0), reports[0].Started)
			}
		}
		idx, cnt := 0, 1
		if r.Shard != "" {
			sh, err := ParseShard(r.Shard, func(string) string { return "" })
			if err != nil {
				return out, fmt.Errorf("%s: %w", label(i), err)
			}
			idx, cnt = sh.Index, sh.Count
		}
		switch {
		case n < 0 || cnt == n:
		case r.Shard == "":
			return out, fmt.Errorf("%s: not a shard report (verify ran without --shard): it cannot be merged with shards of %d", label(i), n)
		case n == 1:
			return out, fmt.Errorf("%s: shard %s, but %s is not a shard report (verify ran without --shard): they cannot be merged", label(i), r.Shard, label(0))
		default:
			return out, fmt.Errorf("%s: shard %s is not one of %d shards", label(i), r.Shard, n)
		}
		n = cnt
		if seen[idx] && cnt == 1 {
			return out, fmt.Errorf("%s: not a shard report (verify ran without --shard), nor is %s: whole runs are not merged", label(i), label(0))
		}
		if seen[idx] {
			return out, fmt.Errorf("%s: shard %d/%d given twice", label(i), idx, cnt)
		}
		seen[idx] = true
		if r.Host != "" && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
		for _, ns := range r.Namespaces {
			if !slices.Contains(nss, ns) {
				nss = append(nss, ns)
			}
		}
		for _, st := range r.StoresLeftOut {
			if !slices.Contains(out.StoresLeftOut, st) {
				out.LeaveOut(st) // a shard that left a store out leaves the merge incomplete
			}
		}
		if t, err := time.Parse(time.RFC3339, r.Started); err == nil && (started.IsZero() || t.Before(started)) {
			started = t
		}
		if t, err := time.Parse(time.RFC3339, r.Finished); err == nil && t.After(finished) {
			finished = t
		}
		out.Seconds = max(out.Seconds, r.Seconds)
		if r.Requests != nil {
			// The shards' bucket requests and connections add up.
			sum := r.Requests.Add(bucket.Stats{})
			if out.Requests != nil {
				sum = out.Requests.Add(sum)
			}
			out.Requests = &sum
		}
	}
	complete := len(seen) == n
	if !complete {
		out.OK = false
		var idx []string
		for i := range n {
			if seen[i] {
				idx = append(idx, strconv.Itoa(i))
			}
		}
		out.Shard = strings.Join(idx, ",") + "/" + strconv.Itoa(n)
	}
	out.Host = strings.Join(hosts, ",")
	slices.Sort(nss)
	out.Namespaces = nss
	if !started.IsZero() {
		out.Started = started.UTC().Format(time.RFC3339)
	}
	if !finished.IsZero() {
		out.Finished = finished.UTC().Format(time.RFC3339)
	}

	var order []string
	snaps := map[string]*SnapshotResult{}
	seenBy := map[string][]int{} // snapshot: the reports that list it (checked or skipped)
	skipped := map[string]bool{} // removed while some shard ran
	for i, r := range reports {
		for _, name := range r.Skipped {
			if !skipped[name] && snaps[name] == nil {
				order = append(order, name)
			}
			skipped[name] = true
			seenBy[name] = append(seenBy[name], i)
		}
		for _, s := range r.Snapshots {
			if !slices.Contains(seenBy[s.Snapshot], i) {
				seenBy[s.Snapshot] = append(seenBy[s.Snapshot], i)
			}
			m := snaps[s.Snapshot]
			if m == nil {
				c := s
				c.Archives = nil
				m = &c
				snaps[s.Snapshot] = m
				if !skipped[s.Snapshot] {
					order = append(order, s.Snapshot)
				}
			}
			m.OK = m.OK && s.OK
			m.Error = cmp.Or(m.Error, s.Error)
			m.Note = cmp.Or(m.Note, s.Note)
			m.Status = cmp.Or(m.Status, s.Status)
			m.KeyFingerprint = cmp.Or(m.KeyFingerprint, s.KeyFingerprint)
			m.KeyFile = cmp.Or(m.KeyFile, s.KeyFile)
			m.PassphraseRefused = m.PassphraseRefused || s.PassphraseRefused
			if len(m.KeyFiles) == 0 {
				m.KeyFiles = slices.Clone(s.KeyFiles)
			}
			for _, a := range s.Archives {
				j := slices.IndexFunc(m.Archives, func(x ArchiveResult) bool { return x.Archive == a.Archive })
				if j < 0 {
					c := a
					c.Damaged = slices.Clone(a.Damaged)
					if c.damageOnly() {
						c.Error, c.DamageError = "", false
					}
					m.Archives = append(m.Archives, c)
					continue
				}
				x := &m.Archives[j]
				x.OK = x.OK && a.OK
				if !a.damageOnly() {
					x.Error = cmp.Or(x.Error, a.Error)
				}
				x.ChunksChecked += a.ChunksChecked
				x.ChunksKnown += a.ChunksKnown
				x.ChunksFresh += a.ChunksFresh
				x.ChunksPresent += a.ChunksPresent
				x.ChunksOther += a.ChunksOther
				x.CRCOnly = x.CRCOnly || a.CRCOnly
				x.NotVerified = x.NotVerified || a.NotVerified
				x.DamagedCount += a.DamagedCount
				x.BadCopyCount += a.BadCopyCount
				x.Damaged = append(x.Damaged, a.Damaged...)
			}
		}
	}
	for _, name := range order {
		s := snaps[name]
		if skipped[name] {
			// Pruned while a shard ran: gone, not verified, as in one run.
			out.Add(SnapshotResult{Snapshot: name, OK: true, Skipped: true, Archives: []ArchiveResult{}})
			continue
		}
		notVerified := len(seenBy[name]) < len(reports)
		if by := seenBy[name]; notVerified {
			// A backup (or prune) between the shards' runs: the shards
			// that did not see it checked none of its chunks.
			out.NotVerified = append(out.NotVerified, name)
			s.OK = false
			s.Error = fmt.Sprintf("not verified: seen by %s only, not by %s (a backup or prune ran between the shards): the chunks of the other shards were not checked; verify it again",
				shardNames(reports, by, true), shardNames(reports, by, false))
		}
		for i := range s.Archives {
			a := &s.Archives[i]
			if complete && len(seenBy[name]) == len(reports) {
				a.ChunksOther = 0
			}
			if notVerified && a.OK {
				// Not found damaged, but not checked whole either.
				a.OK, a.NotVerified = false, true
			}
			if a.Error == "" && a.DamagedCount > 0 {
				a.Error, a.DamageError = DamageSummary(a.DamagedCount), true
			}
			slices.SortFunc(a.Damaged, func(x, y DamagedChunk) int {
				return cmp.Or(cmp.Compare(first(x.Offsets), first(y.Offsets)), cmp.Compare(x.Digest, y.Digest))
			})
		}
		if s.Archives == nil {
			s.Archives = []ArchiveResult{}
		}
		out.Add(*s)
	}
	// The shards' chunks are disjoint: their distinct counts add up (the
	// archives' would count a shared chunk in each).
	out.ChunksFresh, out.ChunksPresent, out.BadCopyChunks = 0, 0, 0
	for _, r := range reports {
		out.ChunksFresh += r.ChunksFresh
		out.ChunksPresent += r.ChunksPresent
		out.BadCopyChunks += r.BadCopyChunks
	}
	switch {
	case !out.OK && out.Damaged() == 0 && out.WithoutKey > 0 && len(out.NotVerified) == 0 && complete:
		out.ExitCode = 3 // only keys missing: not checked, no damage
	case !out.OK:
		out.ExitCode = 1
	}
	return out, nil
}

// shardNames names the shards of reports whose index is in idx (in: true)
// or is not (in: false): "shard 0/2, shard 1/2".
func shardNames(reports []Report, idx []int, in bool) string {
	var names []string
	for i, r := range reports {
		if slices.Contains(idx, i) == in {
			names = append(names, "shard "+cmp.Or(r.Shard, "0/1"))
		}
	}
	return strings.Join(names, ", ")
}

// Incomplete returns why merged, the Merge of reports, checked less than
// the whole run would have, for a cause outside the data (the command
// exits 3 for it): shards missing, snapshots seen by only some shards, a
// shard that could not check everything (exit code 3). It returns nil when
// nothing is missing.
func Incomplete(merged Report, reports []Report) error {
	var err error
	if merged.Shard != "" {
		err = fmt.Errorf("only shards %s merged: the chunks of the other shards are not checked (merge the reports of all shards, or run the missing ones again)", merged.Shard)
	}
	if len(merged.NotVerified) > 0 {
		err = fmt.Errorf("%d snapshot(s) seen by only some shards (a backup or prune ran between them), not verified: %s",
			len(merged.NotVerified), strings.Join(merged.NotVerified, " "))
	}
	for _, r := range reports {
		if r.ExitCode == 3 {
			err = fmt.Errorf("shard %s could not check everything (exit code %d)", cmp.Or(r.Shard, "0/1"), r.ExitCode)
		}
	}
	return err
}
