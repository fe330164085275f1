package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/extract"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// pxTree is a container root file system in small: every entry kind, and
// the attributes extraction sets; big adds two files of big bytes each.
func pxTree(big int64) *pxar.Node {
	f := func(name string, data []byte) *pxar.Node {
		return &pxar.Node{Name: name, Kind: pxar.KindFile, Metadata: pxar.Metadata{Mode: 0o644, UID: 0, GID: 0, MTimeSec: 1700000000, MTimeNsec: 7}, Data: data}
	}
	d := func(name string, kids ...*pxar.Node) *pxar.Node {
		return &pxar.Node{Name: name, Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755, MTimeSec: 1600000000}, Children: kids}
	}
	shadow := f("shadow", []byte("root:*:19000:0:99999:7:::\n"))
	shadow.Mode, shadow.GID = 0o640, 42
	shadow.Xattrs = []pxar.Xattr{{Name: []byte("user.note"), Value: []byte("x")}}
	shadow.ACL = pxar.ACL{Users: []pxar.ACLEntry{{ID: 1000, Permissions: 4}}, GroupObj: new(uint64)}
	caps := make([]byte, 20)
	binary.LittleEndian.PutUint32(caps, 0x02000001)
	binary.LittleEndian.PutUint32(caps[4:], 1<<13) // CAP_NET_RAW
	ping := f("ping", fixture.Mixed(600<<10, 5))
	ping.Mode, ping.FCaps = 0o755, caps
	home := d("user", f(".bashrc", []byte("alias ll='ls -l'\n")))
	home.UID, home.GID, home.Mode = 1000, 1000, 0o700
	root := d("",
		d("bin", ping),
		d("dev", &pxar.Node{Name: "null", Kind: pxar.KindDevice, Metadata: pxar.Metadata{Mode: 0o666}, Device: pxar.Device{Major: 1, Minor: 3}},
			&pxar.Node{Name: "initctl", Kind: pxar.KindFIFO, Metadata: pxar.Metadata{Mode: 0o600}}),
		d("etc", f("hostname", []byte("ct200\n")), shadow,
			&pxar.Node{Name: "localtime", Kind: pxar.KindSymlink, Metadata: pxar.Metadata{Mode: 0o777}, LinkTarget: "/usr/share/zoneinfo/UTC"}),
		d("home", home),
		d("usr", d("bin", &pxar.Node{Name: "ping4", Kind: pxar.KindHardlink, LinkTarget: "bin/ping"})),
	)
	if big > 0 {
		root.Children = append(root.Children, d("var", f("big1", fixture.Mixed(big, 11)), f("big2", fixture.Mixed(big, 12))))
	}
	return root
}

// pxSnap is one ct snapshot of the pxar tests: legacy or split, plain or
// encrypted.
type pxSnap struct {
	snap       string
	split, enc bool
}

// pxStore writes a snapshot of tree for every form into a new directory
// datastore, each at its own time, and returns the store, the snapshots
// and the key file of the encrypted ones.
func pxStore(t *testing.T, tree func() *pxar.Node) (string, []pxSnap, string) {
	t.Helper()
	store := fixture.NewStore(t)
	key, cc := fixture.Key(t, 9)
	keyfile := fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")
	var snaps []pxSnap
	for i, form := range []struct{ split, enc bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		s := fixture.Snap(t, "", "ct", "200", fixture.T0+int64(i)*3600)
		o := fixture.PxarOptions{Split: form.split, Seed: uint64(i)}
		if form.enc {
			o.Key = cc
		}
		fixture.PxarSnapshot(t, store, s, tree(), o)
		snaps = append(snaps, pxSnap{s.String(), form.split, form.enc})
	}
	return store, snaps, keyfile
}

// pxArchive decodes tree as the tests compare against it.
func pxArchive(t *testing.T, tree *pxar.Node) *pxar.Archive {
	t.Helper()
	var m bytes.Buffer
	if err := pxar.Encode(&m, nil, tree); err != nil {
		t.Fatal(err)
	}
	a, err := pxar.Open(bytes.NewReader(m.Bytes()), int64(m.Len()), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// pxReport is the JSON report of a pxar restore.
type pxReport struct {
	Files, Dirs, Symlinks, Hardlinks, Specials, Bytes, Warnings int64
	ChunksFetched                                               uint64 `json:"chunks-fetched"`
	ExitCode                                                    int    `json:"exit-code"`
}

func pxRestore(t *testing.T, args ...string) pxReport {
	t.Helper()
	r := mustOK(t, append([]string{"restore", "--output-format", "json"}, args...)...)
	var rep pxReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%v", err, r)
	}
	return rep
}

// TestRestorePxarPlaces extracts root.pxar from a directory store, S3
// (versitygw) and GCS (fake-gcs-server), legacy and split, plain and
// encrypted, and compares the tree entry by entry.
func TestRestorePxarPlaces(t *testing.T) {
	fixture.SkipIfShort(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: owners, device nodes")
	}
	store, snaps, keyfile := pxStore(t, func() *pxar.Node { return pxTree(0) })
	root := t.TempDir()
	fixture.CopyDir(t, store, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	gcs := testenv.StartGCS(t, "gbkt")
	bktSetEnv(t, gcs.Host)
	bktUploadGCS(t, gcs.Server, "gbkt", "plain/ds", store)
	a := pxArchive(t, pxTree(0))
	for _, place := range []struct {
		name  string
		flags []string
	}{
		{"dir", []string{"--store", store}},
		{"s3", []string{"--store", "s3://bkt/ds", "--s3-endpoint", s3.Endpoint}},
		{"gcs", []string{"--store", "gs://gbkt/plain/ds"}},
	} {
		for _, s := range snaps {
			t.Run(fmt.Sprintf("%s/split=%v/enc=%v", place.name, s.split, s.enc), func(t *testing.T) {
				args := place.flags
				if s.enc {
					args = append(args, "--keyfile", keyfile)
				}
				dir := filepath.Join(t.TempDir(), "rootfs")
				rep := pxRestore(t, append(args, s.snap, "root.pxar", dir)...)
				fixture.PxarTreeEqual(t, a, dir, 0)
				if rep.Files != 4 || rep.Hardlinks != 1 || rep.Specials != 2 || rep.ChunksFetched == 0 || rep.ExitCode != 0 {
					t.Errorf("report %+v", rep)
				}
				// The whole container from the same place.
				guest := t.TempDir()
				mustOK(t, append(append([]string{"restore-guest"}, args...), s.snap, guest)...)
				fixture.PxarTreeEqual(t, a, filepath.Join(guest, "rootfs"), 0)
				if _, err := os.Stat(filepath.Join(guest, "pct.conf")); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestRestorePxarMapIDs extracts for an unprivileged container: every id
// shifted by 100000, as PVE's default map.
func TestRestorePxarMapIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: owners")
	}
	store, snaps, _ := pxStore(t, func() *pxar.Node { return pxTree(0) })
	dir := t.TempDir()
	pxRestore(t, "--store", store, "--map-ids", "100000", "--force", snaps[1].snap, "root.pxar", dir)
	fixture.PxarTreeEqual(t, pxArchive(t, pxTree(0)), dir, 100000)
	mustFail(t, exitUsage, []string{"--map-ids"}, "restore", "--store", store, "--map-ids", "-5", snaps[0].snap, "root.pxar", t.TempDir())
}

// TestRestorePxarRefusals: a non-empty DIR without --force, an --include
// the archive lacks, an archive the snapshot lacks are usage errors (exit
// 2) and write nothing.
func TestRestorePxarRefusals(t *testing.T) {
	store, snaps, _ := pxStore(t, func() *pxar.Node { return pxTree(0) })
	dir := t.TempDir()
	fixture.WriteFile(t, dir, "mine", []byte("x"))
	mustFail(t, exitUsage, []string{"not empty", "--force"}, "restore", "--store", store, snaps[0].snap, "root.pxar", dir)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("refused run wrote %d entries", len(ents))
	}
	mustFail(t, exitUsage, []string{"no such path in the archive"}, "restore", "--store", store, "--include", "etc/nope", snaps[0].snap, "root.pxar", t.TempDir())
	mustFail(t, exitUsage, []string{"no such pxar archive"}, "restore", "--store", store, snaps[0].snap, "other.pxar", t.TempDir())
	mustFail(t, exitUsage, []string{"DIR is empty"}, "restore", "--store", store, snaps[0].snap, "root.pxar", "")
	for _, inc := range []string{"", "..", "/", "./a/.."} {
		mustFail(t, exitUsage, []string{"names the whole archive", "leave --include out"}, "restore", "--store", store, "--include", inc, snaps[0].snap, "root.pxar", t.TempDir())
	}
	// Extraction-only flags are refused for a stream, never ignored.
	for _, f := range [][]string{{"--include", "etc"}, {"--map-ids", "100000"}, {"--same-owner"}} {
		mustFail(t, exitUsage, []string{f[0], "not to a stream"}, append([]string{"restore", "--store", store, snaps[0].snap, "root.pxar", "-", "--format", "tar"}, f...)...)
	}
	// A directory inside the datastore read from is refused before any read.
	inside := filepath.Join(store, "restored")
	mustFail(t, exitUsage, []string{"inside the datastore"}, "restore", "--store", store, snaps[0].snap, "root.pxar", inside)
	if _, err := os.Lstat(inside); err == nil {
		t.Errorf("a refused run created %s", inside)
	}
	// With --force: merged, the file of our own kept.
	pxRestore(t, "--store", store, "--force", snaps[0].snap, "root.pxar", dir)
	if b, err := os.ReadFile(filepath.Join(dir, "mine")); err != nil || string(b) != "x" {
		t.Errorf("merge lost a file: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc", "hostname")); err != nil || string(b) != "ct200\n" {
		t.Errorf("merge: %q %v", b, err)
	}
}

// TestRestorePxarDamage: a chunk of the archive damaged in the store fails
// the extraction with exit 1 naming the chunk; a malformed archive says
// "damaged archive" with the path and offset, exit 1.
func TestRestorePxarDamage(t *testing.T) {
	store := fixture.NewStore(t)
	s := fixture.Snap(t, "", "ct", "200", fixture.T0)
	fixture.PxarSnapshot(t, store, s, pxTree(0), fixture.PxarOptions{Split: true})
	// Damage every payload chunk past the first: a file's content fails.
	raw, err := os.ReadFile(fixture.SnapPath(store, s, "root.ppxar.didx"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := index.ParseDynamic(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range x.Entries[1:] {
		p := fixture.ChunkPath(store, e.Digest)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := mustFail(t, exitData, []string{"bin/ping", "payload stream offset"}, "restore", "--store", store, s.String(), "root.pxar", t.TempDir())
	if !strings.Contains(r.err, "root.ppxar.didx") || !strings.Contains(r.err, "chunk ") {
		t.Errorf("error names no chunk: %v", r)
	}

	// A malformed archive: the root's goodbye tail lies about its table.
	var m bytes.Buffer
	if err := pxar.Encode(&m, nil, pxTree(0)); err != nil {
		t.Fatal(err)
	}
	meta := m.Bytes()
	binary.LittleEndian.PutUint64(meta[len(meta)-8:], binary.LittleEndian.Uint64(meta[len(meta)-8:])+24)
	store2 := fixture.NewStore(t)
	fixture.PxarStreams(t, store2, s, meta, nil, nil, fixture.PxarOptions{})
	dir := t.TempDir()
	r = mustFail(t, exitData, []string{"damaged archive", "archive stream offset", "goodbye"}, "restore", "--store", store2, s.String(), "root.pxar", dir)
	r = pbs(t, "restore", "--store", store2, "--output-format", "json", s.String(), "root.pxar", t.TempDir())
	var rep pxReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || rep.ExitCode != exitData || r.code != exitData {
		t.Errorf("JSON of a damaged archive: %v %+v", err, rep)
	}
}

// TestRestorePxarIncludeFetches: --include of one 20 MiB file of a split
// archive in an S3 bucket fetches its chunks and the metadata stream's,
// not the chunks of the 20 MiB file beside it (GETs counted at a proxy),
// and the report's count is the proxy's.
func TestRestorePxarIncludeFetches(t *testing.T) {
	fixture.SkipIfShort(t)
	const big = 20 << 20
	store := fixture.NewStore(t)
	s := fixture.Snap(t, "", "ct", "200", fixture.T0)
	tree := pxTree(big)
	fixture.PxarSnapshot(t, store, s, tree, fixture.PxarOptions{Split: true, Seed: 3})
	root := t.TempDir()
	fixture.CopyDir(t, store, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "")
	proxy := bktProxy(t, s3.Endpoint, 0, faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"})

	// The payload chunks lying wholly within var/big2, the last file of
	// the payload stream (before its 16-byte tail marker).
	didx := func(name string) *index.DynamicIndex {
		raw, err := os.ReadFile(fixture.SnapPath(store, s, name))
		if err != nil {
			t.Fatal(err)
		}
		x, err := index.ParseDynamic(raw)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	payload, meta := didx("root.ppxar.didx"), didx("root.mpxar.didx")
	end := payload.Size() - 16
	var big2Only int
	start := uint64(0)
	for _, e := range payload.Entries {
		if start >= end-big && e.End <= end {
			big2Only++
		}
		start = e.End
	}
	const fetchers = 4
	args := []string{"--store", "s3://bkt/ds", "--s3-endpoint", proxy.URL, "--fetchers", fmt.Sprint(fetchers)}
	dir := t.TempDir()
	rep := pxRestore(t, append(args, "--include", "var/big1", s.String(), "root.pxar", dir)...)
	got := proxy.Matched()[0]
	if b, err := os.ReadFile(filepath.Join(dir, "var", "big1")); err != nil || !bytes.Equal(b, fixture.Mixed(big, 11)) {
		t.Fatalf("var/big1 not extracted whole: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "var")); len(ents) != 1 || rep.Files != 1 {
		t.Errorf("extracted %d entries in var, report %+v", len(ents), rep)
	}
	all := len(payload.Entries) + len(meta.Entries)
	// Read-ahead may run past the file's end by a few chunks.
	if limit := all - big2Only + 2*fetchers; got > limit || got < big/(80<<10) {
		t.Errorf("--include of one file: %d chunk GETs, want at most %d (%d chunks in all, %d of them only the other file's)", got, limit, all, big2Only)
	}
	t.Logf("include: %d GETs of %d chunks (%d only big2)", got, all, big2Only)
	if int(rep.ChunksFetched) != got {
		t.Errorf("report says %d chunks fetched, the proxy counted %d GETs", rep.ChunksFetched, got)
	}
	// The whole archive: every chunk, once.
	before := got
	rep = pxRestore(t, append(args, s.String(), "root.pxar", t.TempDir())...)
	if n := proxy.Matched()[0] - before; n < all-2 || int(rep.ChunksFetched) != n {
		t.Errorf("whole archive: %d chunk GETs, report %d, of %d chunks", n, rep.ChunksFetched, all)
	}
}

// TestRestoreGuestCT restores container snapshots, legacy and split, plain
// and encrypted: root.pxar extracted into DIR/rootfs (or --map
// root.pxar=DIR2) and pct.conf written beside it; a non-empty rootfs is
// refused before anything is written.
func TestRestoreGuestCT(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: owners, device nodes")
	}
	store, snaps, keyfile := pxStore(t, func() *pxar.Node { return pxTree(0) })
	a := pxArchive(t, pxTree(0))
	for _, s := range snaps {
		t.Run(fmt.Sprintf("split=%v/enc=%v", s.split, s.enc), func(t *testing.T) {
			args := []string{"restore-guest", "--store", store}
			if s.enc {
				args = append(args, "--keyfile", keyfile)
			}
			dir := t.TempDir()
			r := mustOK(t, append(args, s.snap, dir)...)
			fixture.PxarTreeEqual(t, a, filepath.Join(dir, "rootfs"), 0)
			if b, err := os.ReadFile(filepath.Join(dir, "pct.conf")); err != nil || !strings.Contains(string(b), "hostname: ct") {
				t.Errorf("pct.conf: %q %v", b, err)
			}
			if !strings.Contains(r.out, "restored container") || !strings.Contains(r.out, "configuration written") {
				t.Errorf("report: %v", r)
			}
			// --map, JSON, an id shift.
			dir2, other := t.TempDir(), filepath.Join(t.TempDir(), "ct200")
			r = mustOK(t, append(args, "--output-format", "json", "--map", "root.pxar="+other, "--map-ids", "100000", s.snap, dir2)...)
			fixture.PxarTreeEqual(t, a, other, 100000)
			var rep ctGuestReport
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil || len(rep.Archives) != 1 || rep.Archives[0].Files != 4 || rep.Config != filepath.Join(dir2, "pct.conf") {
				t.Errorf("JSON report %+v: %v", rep, err)
			}
			// Again into the same DIR: refused, naming both.
			r = mustFail(t, exitUsage, []string{"rootfs", "not empty", "pct.conf"}, append(args, s.snap, dir)...)
		})
	}
}

// TestPxarErrorExitCodes: what an extraction fails on decides the exit
// code: the file system written is outside the data (3), a malformed
// archive is damage (1), a refusal of the command line is a usage error
// (2).
func TestPxarErrorExitCodes(t *testing.T) {
	malformed := pxarMalformed(t)
	cases := []struct {
		name string
		err  error
		code int
	}{
		{"no space", &extract.FSError{Path: "var/big", Op: "write at 0", Err: syscall.ENOSPC}, exitOutside},
		{"permission on DIR", &extract.FSError{Path: ".", Op: "open /x", Err: syscall.EACCES}, exitOutside},
		{"malformed archive", malformed, exitData},
		{"not empty", fmt.Errorf("x: %w", extract.ErrNotEmpty), exitUsage},
		{"include missing", fmt.Errorf("x: %w", extract.ErrNotFound), exitUsage},
		{"id shift too far", fmt.Errorf("x: %w", extract.ErrIDRange), exitUsage},
		{"DIR busy", fmt.Errorf("x: %w", extract.ErrBusy), exitOutside},
	}
	for _, c := range cases {
		if got := exitCode(extractError(c.err)); got != c.code {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.code)
		}
	}
	if s := extractError(malformed).Error(); !strings.HasPrefix(s, "damaged archive: ") {
		t.Errorf("malformed archive: %q", s)
	}
}

// pxarMalformed is the decoder's error for an archive whose root goodbye
// tail lies.
func pxarMalformed(t *testing.T) error {
	var m bytes.Buffer
	if err := pxar.Encode(&m, nil, pxTree(0)); err != nil {
		t.Fatal(err)
	}
	b := m.Bytes()
	binary.LittleEndian.PutUint64(b[len(b)-8:], 1)
	_, err := pxar.Open(bytes.NewReader(b), int64(len(b)), nil, 0)
	if err == nil {
		a, _ := pxar.Open(bytes.NewReader(b), int64(len(b)), nil, 0)
		err = a.ReadDir(a.Root(), func(*pxar.Entry) error { return nil })
	}
	if !errors.Is(err, pxar.ErrFormat) {
		t.Fatalf("patched archive: %v", err)
	}
	return err
}
