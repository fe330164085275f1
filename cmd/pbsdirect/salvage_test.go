package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestSalvageBadCopies: a PBS 4.0 bucket whose verify renamed two intact
// chunks to "<digest>.N.bad" (transient S3 errors, before PBS's fix 6665)
// holds them only under those names. One chunk is there only as .0.bad;
// the other's object is damaged, its .0.bad damaged too and its .1.bad
// intact. A restore recovers both from the intact .bad copies, byte for
// byte, exit 0, and names each copy in its text and JSON summaries; a
// verify exits 1, reporting both chunks with their .bad copy (PBS cannot
// read them). A restore of the bucket as it was lists nothing (the
// ordinary path costs no request), the salvage one listing per chunk; a
// listing refused (403) makes the missing chunk's restore exit 3, saying
// the .bad copies could not be tried.
func TestSalvageBadCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw")
	}
	data := fixture.Build(5, fixture.Region{Kind: fixture.Random, Len: 2 << 20})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	srv := testenv.StartS3(t)
	bdir := srv.Bucket(t, "bkt")
	bktSetEnv(t, "")
	mustOK(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, "--backup-type", "vm", "--backup-id", "100",
		"--backup-time", t0str, "--chunk-size", "256", "drive-scsi0.img:"+img)

	// Chunks of random data (the zero chunk, compressed to a few bytes, is
	// never read by a restore).
	var chunks []string
	filepath.WalkDir(filepath.Join(bdir, "store", ".chunks"), func(p string, de fs.DirEntry, err error) error {
		if info, ierr := de.Info(); err == nil && ierr == nil && de.Type().IsRegular() && info.Size() > 200<<10 {
			chunks = append(chunks, p)
		}
		return err
	})
	slices.Sort(chunks)
	if len(chunks) < 2 {
		t.Fatalf("want 2 data chunks in the bucket, have %d", len(chunks))
	}
	gone, damaged := chunks[0], chunks[1]
	s3Lists := faultproxy.Rule{Method: "GET", QueryContains: ".chunks"} // ListObjectsV2 of a chunk key prefix
	restoreJSON := func(t *testing.T, p *faultproxy.Proxy) (result, string) {
		target := filepath.Join(t.TempDir(), "r.raw")
		return pbs(t, "restore", "--output-format", "json", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, snap0, "drive-scsi0", target), target
	}

	// As PBS wrote it: no .bad copy is looked for.
	p := bktProxy(t, srv.Endpoint, 0, s3Lists)
	if r, target := restoreJSON(t, p); r.code != 0 {
		t.Fatalf("restore: %v", r)
	} else {
		fixture.Equal(t, target, data)
	}
	if n := p.Matched()[0]; n != 0 {
		t.Errorf("a restore of intact chunks listed .bad copies %d times, want 0", n)
	}

	// What PBS 4.0's verify left.
	good, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(gone, gone+".0.bad"); err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(good)
	flipped[len(flipped)/2] ^= 1
	for name, b := range map[string][]byte{damaged: flipped, damaged + ".0.bad": flipped, damaged + ".1.bad": good, damaged + ".10.bad": good} {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obj := func(file string) string {
		rel, _ := filepath.Rel(srv.Root, file)
		return "s3://" + filepath.ToSlash(rel)
	}
	wantCopies := []string{obj(gone + ".0.bad"), obj(damaged + ".1.bad")}

	p = bktProxy(t, srv.Endpoint, 0, s3Lists)
	r, target := restoreJSON(t, p)
	if r.code != 0 {
		t.Fatalf("restore: want exit 0, recovered from .bad copies: %v", r)
	}
	fixture.Equal(t, target, data)
	var sum restore.Summary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil {
		t.Fatalf("restore JSON: %v\n%s", err, r.out)
	}
	var got []string
	for _, c := range sum.Salvaged {
		got = append(got, c.Copy)
	}
	slices.Sort(got)
	if sum.SalvagedChunks != 2 || !slices.Equal(got, wantCopies) || sum.ExitCode != 0 {
		t.Errorf("restore JSON: recovered %d chunk(s) from %q (exit %d), want 2 from %q", sum.SalvagedChunks, got, sum.ExitCode, wantCopies)
	}
	if n := p.Matched()[0]; n != 2 {
		t.Errorf("the restore listed .bad copies %d times, want 2 (one per chunk)", n)
	}

	r = pbs(t, "restore", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
	if r.code != 0 {
		t.Fatalf("restore (text): %v", r)
	}
	for _, c := range wantCopies {
		if !strings.Contains(r.out, "recovered from a .bad copy: "+c) {
			t.Errorf("restore text does not name %s:\n%s", c, r.out)
		}
	}

	r = pbs(t, "verify", "--output-format", "json", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, snap0)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("verify JSON: %v\n%s", err, r.out)
	}
	got = nil
	for _, s := range rep.Snapshots {
		for _, a := range s.Archives {
			for _, d := range a.Damaged {
				got = append(got, d.BadCopy)
			}
		}
	}
	slices.Sort(got)
	if r.code != 1 || rep.ExitCode != 1 || rep.BadCopyChunks != 2 || !slices.Equal(got, wantCopies) {
		t.Errorf("verify: exit %d/%d, %d chunk(s) only in .bad copies %q; want exit 1, 2 in %q\n%s", r.code, rep.ExitCode, rep.BadCopyChunks, got, wantCopies, r.out)
	}
	r = pbs(t, "verify", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, snap0)
	if r.code != 1 || !strings.Contains(r.out, "recovered from a .bad copy: "+wantCopies[0]) || !strings.Contains(r.out, "PBS does not read") {
		t.Errorf("verify text: want exit 1 naming the .bad copy: %v", r)
	}

	// The listing refused: whether a .bad copy would serve is unknown.
	p = bktProxy(t, srv.Endpoint, 0, faultproxy.Rule{Method: "GET", QueryContains: ".chunks", Status: 403, Code: "AccessDenied"})
	if r, _ := restoreJSON(t, p); r.code != 3 || !strings.Contains(r.out+r.err, "could not all be tried") {
		t.Errorf("restore with the .bad listing refused: want exit 3 saying the copies could not be tried: %v", r)
	}
}

// TestSalvageCountedOnce: a chunk intact only in a .bad copy that two
// archives share is one chunk in verify's total (bad-copy-only-chunks),
// while each archive counts it among its own.
func TestSalvageCountedOnce(t *testing.T) {
	data := fixture.Build(41, fixture.Region{Kind: fixture.Random, Len: 1 << 20})
	dir := t.TempDir()
	d0 := fixture.WriteFile(t, dir, "d0.raw", data)
	d1 := fixture.WriteFile(t, dir, "d1.raw", data)
	store := fixture.NewStore(t)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64",
		"drive-scsi0.img:"+d0, "drive-scsi1.img:"+d1)
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	p := chunkFile(store, ds[0])
	if err := os.Rename(p, p+".0.bad"); err != nil {
		t.Fatal(err)
	}
	r := pbs(t, "verify", "--output-format", "json", "--store", store)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("verify JSON: %v\n%s", err, r.out)
	}
	per := 0
	for _, s := range rep.Snapshots {
		for _, a := range s.Archives {
			per += a.BadCopyCount
		}
	}
	if r.code != 1 || rep.BadCopyChunks != 1 || per != 2 {
		t.Errorf("verify: exit %d, bad-copy-only-chunks %d, archives' counts %d; want 1, 1, 2\n%s", r.code, rep.BadCopyChunks, per, r.out)
	}
}

// TestSalvageBadCopiesBehindJunk: other keys under a chunk's key (130 of
// them sorting before its only intact copy, ".9.bad") do not hide that
// copy: the restore recovers the chunk from it, exit 0, naming it. With
// more keys than bucket.MaxBadCopyPages listing pages hold, the search is
// cut short: exit 3 (a retry or a look may help), never the proven-missing
// exit 1.
func TestSalvageBadCopiesBehindJunk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw")
	}
	data := fixture.Build(6, fixture.Region{Kind: fixture.Random, Len: 1 << 20})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	srv := testenv.StartS3(t)
	bdir := srv.Bucket(t, "bkt")
	bktSetEnv(t, "")
	mustOK(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, "--backup-type", "vm", "--backup-id", "100",
		"--backup-time", t0str, "--chunk-size", "256", "drive-scsi0.img:"+img)
	var chunk string
	filepath.WalkDir(filepath.Join(bdir, "store", ".chunks"), func(p string, de fs.DirEntry, err error) error {
		if info, ierr := de.Info(); chunk == "" && err == nil && ierr == nil && de.Type().IsRegular() && info.Size() > 200<<10 {
			chunk = p
		}
		return err
	})
	if chunk == "" {
		t.Fatal("no data chunk in the bucket")
	}
	if err := os.Rename(chunk, chunk+".9.bad"); err != nil {
		t.Fatal(err)
	}
	junk := func(from, to int) {
		for i := from; i < to; i++ {
			if err := os.WriteFile(fmt.Sprintf("%s.0junk%05d", chunk, i), []byte{1}, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	junk(0, 130)
	rel, _ := filepath.Rel(srv.Root, chunk+".9.bad")
	copyURL := "s3://" + filepath.ToSlash(rel)
	r := pbs(t, "restore", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
	if r.code != 0 || !strings.Contains(r.out, "recovered from a .bad copy: "+copyURL) {
		t.Fatalf("restore behind 130 other keys: want exit 0 naming %s: %v", copyURL, r)
	}

	junk(130, 10100) // more than MaxBadCopyPages pages of 1000 keys
	r = pbs(t, "restore", "--store", "s3://bkt/store", "--s3-endpoint", srv.Endpoint, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
	if r.code != 3 || !strings.Contains(r.out+r.err, "cut short") {
		t.Errorf("restore behind 10100 other keys: want exit 3, the .bad search cut short: %v", r)
	}
}
