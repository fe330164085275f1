package main

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
)

const (
	deltaChunk = 64 << 10
	t1str      = "2026-11-29T11:00:00Z"
	snap1      = "vm/100/" + t1str
)

// deltaImages returns an older image and a newer one: 2 % of 100 data
// chunks changed, two data chunks turned into zeros, a zero chunk turned
// into data, and two chunks more; and the digests of the newer image's
// chunks that differ from the older's at the same position (not zero
// chunks): what a restore onto the older fetches.
func deltaImages() (old, nw []byte, changed map[crypto.Digest]bool) {
	old = fixture.Build(31, fixture.Region{Kind: fixture.Random, Len: 70 * deltaChunk}, fixture.Region{Kind: fixture.Zero, Len: 10 * deltaChunk},
		fixture.Region{Kind: fixture.Text, Len: 20 * deltaChunk})
	nw = append([]byte(nil), old...)
	copy(nw[5*deltaChunk:], storetest.Noise(deltaChunk, 1))
	copy(nw[90*deltaChunk:], storetest.Noise(deltaChunk, 2))
	clear(nw[20*deltaChunk : 22*deltaChunk])
	copy(nw[75*deltaChunk:], storetest.Noise(deltaChunk, 3))
	nw = append(nw, storetest.Noise(2*deltaChunk, 4)...)
	zero := sha256.Sum256(make([]byte, deltaChunk))
	changed = map[crypto.Digest]bool{}
	for off := 0; off < len(nw); off += deltaChunk {
		d := sha256.Sum256(nw[off:min(off+deltaChunk, len(nw))])
		if d == zero {
			continue
		}
		if off+deltaChunk > len(old) || sha256.Sum256(old[off:off+deltaChunk]) != d {
			changed[crypto.Digest(d)] = true
		}
	}
	return old, nw, changed
}

// backupDeltaPair backs up old and nw as vm/100 at t0str and t1str (64 KiB
// chunks) into the store the flags name.
func backupDeltaPair(t *testing.T, old, nw []byte, store ...string) {
	t.Helper()
	for _, v := range []struct {
		data []byte
		when string
	}{{old, t0str}, {nw, t1str}} {
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", v.data)
		mustOK(t, append(append([]string{"backup"}, store...), "--backup-type", "vm", "--backup-id", "100",
			"--backup-time", v.when, "--chunk-size", "64", "drive-scsi0.img:"+img)...)
	}
}

// dryReport parses a dry run's JSON report.
func dryReport(t *testing.T, r result) dryRunReport {
	t.Helper()
	var rep dryRunReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("dry run report: %v: %s", err, r.out)
	}
	return rep
}

// restoreReport parses a restore's JSON summary.
func restoreReport(t *testing.T, r result) restore.Summary {
	t.Helper()
	var sum restore.Summary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil {
		t.Fatalf("restore summary: %v: %s", err, r.out)
	}
	return sum
}

// TestDeltaRestoreS3: from the S3 test server, restoring snapshot N with
// --base auto onto a target that holds N-1 (restored by pbsdirect, which
// recorded it) fetches exactly the changed chunks, counted at a proxy, and
// leaves the target byte-identical to N; the dry run before it says the
// same numbers (chunks, encoded bytes, GET requests), its --check-present
// HEAD requests counted too. A second run with --base auto (the record now
// names N) fetches nothing. Before, --base was an unknown flag.
func TestDeltaRestoreS3(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, changed := deltaImages()
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "127.0.0.1:1")
	backupDeltaPair(t, old, nw, "--store", "s3://bkt/store", "--s3-endpoint", s3.Endpoint)
	p := bktProxy(t, s3.Endpoint, 0)
	target := filepath.Join(t.TempDir(), "disk.img")
	args := func(snap string, extra ...string) []string {
		return append(append([]string{"restore", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, "--output-format", "json"}, extra...),
			snap, "drive-scsi0", target)
	}
	mustOK(t, args(snap0)...)
	fixture.Equal(t, target, old)

	count := func() {
		p.SetRules(faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"}, faultproxy.Rule{Method: "HEAD", PathContains: "/.chunks/"})
	}
	count()
	dry := dryReport(t, mustOK(t, args(snap1, "--dry-run", "--base", "auto", "--check-present")...))
	if m := p.Matched(); m[0] != 0 || m[1] != dry.HeadRequests || dry.HeadRequests != len(changed) {
		t.Errorf("the dry run made %d chunk GETs and %d HEADs (it says %d HEADs), want 0 and %d", m[0], m[1], dry.HeadRequests, len(changed))
	}
	fixture.Equal(t, target, old)
	count()
	sum := restoreReport(t, mustOK(t, args(snap1, "--base", "auto")...))
	fixture.Equal(t, target, nw)
	if m := p.Matched(); m[0] != len(changed) {
		t.Errorf("the restore with --base made %d chunk GETs, want the %d changed chunks", m[0], len(changed))
	}
	if dry.Chunks != int(sum.ChunksFetched) || dry.EncodedBytes != sum.FetchedBytes || dry.GetRequests != p.Matched()[0] || dry.EncodedSizes != "head" {
		t.Errorf("dry run said %d chunks, %d encoded bytes (%s), %d GETs; the run fetched %d chunks, %d bytes in %d GETs",
			dry.Chunks, dry.EncodedBytes, dry.EncodedSizes, dry.GetRequests, sum.ChunksFetched, sum.FetchedBytes, p.Matched()[0])
	}
	if sum.Delta == nil || sum.Delta.Mode != "base" || sum.Delta.Base != snap0 {
		t.Errorf("summary's delta %+v: want base %s", sum.Delta, snap0)
	}
	count()
	mustOK(t, args(snap1, "--base", "auto")...)
	if m := p.Matched(); m[0] != 0 {
		t.Errorf("restoring N onto N fetched %d chunks", m[0])
	}
	fixture.Equal(t, target, nw)
}

// TestDeltaRestoreRefusedAndInPlace, from a datastore directory: --base
// over a target changed since its restore is refused (exit 2, naming
// --verify-base) and changes nothing; --verify-base corrects it, fetching
// the changed chunks and the damaged one; --in-place over random damage
// fetches exactly the damaged chunks; each dry run's numbers are the run's.
func TestDeltaRestoreRefusedAndInPlace(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, changed := deltaImages()
	store := t.TempDir()
	backupDeltaPair(t, old, nw, "--store", store)
	target := filepath.Join(t.TempDir(), "disk.img")
	args := func(snap string, extra ...string) []string {
		return append(append([]string{"restore", "--store", store, "--output-format", "json"}, extra...), snap, "drive-scsi0", target)
	}
	mustOK(t, args(snap0)...)
	spoil := func(pos ...int) {
		t.Helper()
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range pos {
			if _, err := f.WriteAt(storetest.Noise(deltaChunk, uint64(50+p)), int64(p*deltaChunk)); err != nil {
				t.Fatal(err)
			}
		}
	}
	spoil(40)
	before, _ := os.ReadFile(target)
	mustFail(t, 2, []string{"--base " + snap0 + " refused", "changed since", "--verify-base"}, args(snap1, "--base", snap0)...)
	fixture.Equal(t, target, before)

	check := func(extra ...string) restore.Summary {
		t.Helper()
		dry := dryReport(t, mustOK(t, args(snap1, append([]string{"--dry-run"}, extra...)...)...))
		sum := restoreReport(t, mustOK(t, args(snap1, extra...)...))
		fixture.Equal(t, target, nw)
		if dry.Chunks != int(sum.ChunksFetched) || dry.EncodedBytes != sum.FetchedBytes || dry.EncodedSizes != "stat" {
			t.Errorf("%v: dry run said %d chunks, %d encoded bytes (%s); the run fetched %d chunks, %d bytes",
				extra, dry.Chunks, dry.EncodedBytes, dry.EncodedSizes, sum.ChunksFetched, sum.FetchedBytes)
		}
		return sum
	}
	sum := check("--base", snap0, "--verify-base")
	if want := len(changed) + 1; int(sum.ChunksFetched) != want {
		t.Errorf("--verify-base fetched %d chunks, want the %d changed and the damaged one", sum.ChunksFetched, len(changed))
	}

	damaged := []int{3, 33, 66, 95}
	spoil(damaged...)
	sum = check("--in-place")
	if int(sum.ChunksFetched) != len(damaged) || sum.DataBytes != uint64(len(damaged)*deltaChunk) {
		t.Errorf("--in-place fetched %d chunks and wrote %d bytes, want the %d damaged chunks' %d bytes",
			sum.ChunksFetched, sum.DataBytes, len(damaged), len(damaged)*deltaChunk)
	}
	if r := mustFail(t, 2, nil, args(snap1, "--in-place", "--base", snap0)...); !strings.Contains(r.err, "give one") {
		t.Errorf("--in-place with --base: %v", r)
	}
}

// TestDryRunVerifyAndDrill: verify's and drill's --dry-run say what the
// runs then do: the distinct chunks verify checks (the zero chunk, and a
// chunk two snapshots share, once) and their encoded bytes; the chunks a
// drill fetches; a chunk missing from the store is found by
// --check-present (exit 1) and the cost comes from a --price-table entry.
func TestDryRunVerifyAndDrill(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, _ := deltaImages()
	store := t.TempDir()
	backupDeltaPair(t, old, nw, "--store", store)
	dry := dryReport(t, mustOK(t, "verify", "--store", store, "--output-format", "json", "--dry-run", "vm/100"))
	var rep struct {
		ChunksChecked uint64 `json:"chunks-checked"`
	}
	r := mustOK(t, "verify", "--store", store, "--output-format", "json", "vm/100")
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	if uint64(dry.Chunks) != rep.ChunksChecked || dry.GetRequests != dry.Chunks {
		t.Errorf("verify --dry-run said %d chunks (%d reads), verify checked %d", dry.Chunks, dry.GetRequests, rep.ChunksChecked)
	}

	target := filepath.Join(t.TempDir(), "drill.img")
	dry = dryReport(t, mustOK(t, "drill", "--store", store, "--output-format", "json", "--dry-run", snap1, "drive-scsi0", target))
	r = mustOK(t, "drill", "--store", store, "--output-format", "json", "--remove", snap1, "drive-scsi0", target)
	var drep struct {
		Restore restore.Summary `json:"restore"`
	}
	if err := json.Unmarshal([]byte(r.out), &drep); err != nil {
		t.Fatal(err)
	}
	if uint64(dry.Chunks) != drep.Restore.ChunksFetched || dry.EncodedBytes != drep.Restore.FetchedBytes {
		t.Errorf("drill --dry-run said %d chunks, %d bytes; the drill fetched %d chunks, %d bytes", dry.Chunks, dry.EncodedBytes, drep.Restore.ChunksFetched, drep.Restore.FetchedBytes)
	}

	// A chunk gone from the store; a price table of our own.
	gone := sha256.Sum256(nw[5*deltaChunk : 6*deltaChunk])
	if err := os.Remove(fixture.ChunkPath(store, crypto.Digest(gone))); err != nil {
		t.Fatal(err)
	}
	prices := fixture.WriteFile(t, t.TempDir(), "prices.json", []byte(`{"mine": {"get-per-1000": 1000, "egress-per-gib": 0}}`))
	r = pbs(t, "restore", "--store", store, "--output-format", "json", "--dry-run", "--check-present", "--price-table", prices, "--price-provider", "mine", snap1, "drive-scsi0", target)
	dry = dryReport(t, r)
	if r.code != 1 || dry.Missing != 1 || dry.Archives[0].Checked != dry.Chunks {
		t.Errorf("dry run with a chunk gone: exit %d, %d missing of %d checked; want exit 1, 1 missing", r.code, dry.Missing, dry.Chunks)
	}
	if want := float64(dry.GetRequests); dry.Cost.Provider != "mine" || dry.Cost.Total != want {
		t.Errorf("cost %+v, want $%v from the price table's entry", dry.Cost, want)
	}
}

// TestDrillBase: a drill with --base auto onto a target a drill left
// holding N-1 fetches only the changed chunks, reads the whole target
// back (passing) and records N for the next night; --in-place is the
// fallback when no base is trusted.
func TestDrillBase(t *testing.T) {
	fixture.SkipIfShort(t)
	old, nw, changed := deltaImages()
	store := t.TempDir()
	backupDeltaPair(t, old, nw, "--store", store)
	target := filepath.Join(t.TempDir(), "standby.img")
	drill := func(snap string, extra ...string) restore.Summary {
		t.Helper()
		r := mustOK(t, append(append([]string{"drill", "--store", store, "--output-format", "json"}, extra...), snap, "drive-scsi0", target)...)
		var rep struct {
			Restore restore.Summary `json:"restore"`
		}
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Restore
	}
	drill(snap0)
	sum := drill(snap1, "--base", "auto")
	fixture.Equal(t, target, nw)
	if int(sum.ChunksFetched) != len(changed) || sum.Delta == nil || sum.Delta.Base != snap0 {
		t.Errorf("drill --base auto fetched %d chunks (delta %+v), want the %d changed onto %s", sum.ChunksFetched, sum.Delta, len(changed), snap0)
	}
	if sum = drill(snap1, "--base", "auto"); sum.ChunksFetched != 0 {
		t.Errorf("the next drill fetched %d chunks, want none", sum.ChunksFetched)
	}
}
