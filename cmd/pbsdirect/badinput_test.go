package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// base is a pristine snapshot vm/100/<t0> with drive-scsi0.img.fidx (64 KiB
// chunks) and qemu-server.conf.blob, plain or encrypted, copied per case.
type base struct {
	store    string
	data     []byte
	digests  []crypto.Digest
	keyfile  string // "" for plain
	cc       *crypto.Config
	otherKey string // a key file with another key
	snap     index.Snapshot
}

const victim = 3 // index position of the chunk the chunk cases damage: [196608, 262144)

func newBase(t *testing.T, encrypted bool) *base {
	t.Helper()
	dir := t.TempDir()
	key, cc := fixture.Key(t, 21)
	okey, _ := fixture.Key(t, 22)
	b := &base{
		store: fixture.NewStore(t), data: fixture.Mixed(1536<<10+100, 77),
		otherKey: fixture.KeyFile(t, dir, "other.json", okey, crypto.KDFNone, ""),
		snap:     fixture.Snap(t, "", "vm", "100", fixture.T0),
	}
	args := []string{"backup", "--store", b.store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64"}
	if encrypted {
		b.keyfile = fixture.KeyFile(t, dir, "key.json", key, crypto.KDFNone, "")
		b.cc = cc
		args = append(args, "--keyfile", b.keyfile)
	}
	img := fixture.WriteFile(t, dir, "disk.raw", b.data)
	conf := fixture.WriteFile(t, dir, "100.conf", []byte("memory: 2048\n"))
	mustOK(t, append(args, "drive-scsi0.img:"+img, "qemu-server.conf:"+conf)...)
	_, b.digests = fixture.Digests(t, b.fidx())
	for i, d := range b.digests {
		if i != victim && d == b.digests[victim] {
			t.Fatalf("victim chunk %d is not unique", victim)
		}
	}
	return b
}

func (b *base) clone(t *testing.T) *base {
	c := *b
	c.store = fixture.CopyDir(t, b.store, filepath.Join(t.TempDir(), "store"))
	return &c
}

func (b *base) fidx() string      { return fixture.SnapPath(b.store, b.snap, "drive-scsi0.img.fidx") }
func (b *base) blob() string      { return fixture.SnapPath(b.store, b.snap, "qemu-server.conf.blob") }
func (b *base) manifest() string  { return fixture.SnapPath(b.store, b.snap, "index.json.blob") }
func (b *base) chunk() string     { return fixture.ChunkPath(b.store, b.digests[victim]) }
func (b *base) plaintext() []byte { return b.data[victim*65536 : (victim+1)*65536] }
func (b *base) keyArgs() []string {
	if b.keyfile == "" {
		return nil
	}
	return []string{"--keyfile", b.keyfile}
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, p string, n int64) {
	t.Helper()
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// TestBadInput damages one thing per case and checks that restore fails
// with exit 1, names what failed, claims no success and leaves no target
// behind; for damaged chunks verify must fail too and report the chunk.
func TestBadInput(t *testing.T) {
	bases := map[bool]*base{false: newBase(t, false), true: newBase(t, true)}
	victimRange := fmt.Sprintf("[%d,%d)", victim*65536, (victim+1)*65536)
	type tc struct {
		name    string
		enc     bool
		archive string                      // default drive-scsi0
		mutate  func(t *testing.T, b *base) // damage the clone
		keyArgs func(b *base) []string      // default b.keyArgs()
		want    func(b *base) []string      // stderr must contain all
		chunk   bool                        // a chunk-level failure: verify reports it with offsets
		// verifyOK: verify of the whole snapshot passes (the damage is
		// outside it, e.g. a restore of an archive that is not listed).
		verifyOK bool
		// noKey: no key given opens the snapshot, or its key file is not
		// opened, which is no damage: exit 3 for both.
		noKey bool
	}
	chunkWant := func(what string) func(b *base) []string {
		return func(b *base) []string {
			return []string{b.digests[victim].String(), victimRange, b.chunk(), what}
		}
	}
	cases := []tc{
		// Chunks.
		{name: "missing-chunk", mutate: func(t *testing.T, b *base) { remove(t, b.chunk()) }, want: chunkWant("not found"), chunk: true},
		{name: "crc", mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.chunk(), -1) }, want: chunkWant("CRC"), chunk: true},
		{name: "crc-encrypted", enc: true, mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.chunk(), -1) }, want: chunkWant("CRC"), chunk: true},
		{name: "digest-mismatch", mutate: func(t *testing.T, b *base) {
			other := fixture.Build(999, fixture.Region{Kind: fixture.Random, Len: 65536})
			writeFile(t, b.chunk(), fixture.Encode(t, other, nil, true))
		}, want: chunkWant("digest mismatch"), chunk: true},
		{name: "digest-mismatch-encrypted", enc: true, mutate: func(t *testing.T, b *base) {
			other := fixture.Build(999, fixture.Region{Kind: fixture.Random, Len: 65536})
			writeFile(t, b.chunk(), fixture.Encode(t, other, b.cc, true))
		}, want: chunkWant("digest mismatch"), chunk: true},
		{name: "length-mismatch", mutate: func(t *testing.T, b *base) {
			writeFile(t, b.chunk(), fixture.Encode(t, b.plaintext()[:4096], nil, true))
		}, want: chunkWant("length"), chunk: true},
		{name: "truncated-header", mutate: func(t *testing.T, b *base) { truncate(t, b.chunk(), 10) }, want: chunkWant("truncated"), chunk: true},
		{name: "truncated-encrypted-header", enc: true, mutate: func(t *testing.T, b *base) { truncate(t, b.chunk(), 30) }, want: chunkWant("truncated"), chunk: true},
		{name: "truncated-payload", mutate: func(t *testing.T, b *base) {
			st, _ := os.Stat(b.chunk())
			truncate(t, b.chunk(), st.Size()/2)
		}, want: chunkWant("CRC"), chunk: true},
		{name: "empty-chunk", mutate: func(t *testing.T, b *base) { truncate(t, b.chunk(), 0) }, want: chunkWant("empty"), chunk: true},
		{name: "unknown-magic", mutate: func(t *testing.T, b *base) { fixture.Patch(t, b.chunk(), 0, []byte("garbage!")) }, want: chunkWant("unknown blob magic"), chunk: true},
		{name: "obsolete-magic", mutate: func(t *testing.T, b *base) {
			fixture.Patch(t, b.chunk(), 0, []byte{0x1f, 0x87, 0xee, 0xe2, 0x91, 0xce, 0x05, 0x02}) // authenticated blob v1.0
		}, want: chunkWant("obsolete"), chunk: true},
		{name: "plain-chunk-in-encrypted-archive", enc: true, mutate: func(t *testing.T, b *base) {
			writeFile(t, b.chunk(), fixture.Encode(t, b.plaintext(), nil, true))
		}, want: chunkWant("crypt mode"), chunk: true},
		{name: "encrypted-chunk-in-plain-archive", mutate: func(t *testing.T, b *base) {
			_, cc := fixture.Key(t, 21)
			writeFile(t, b.chunk(), fixture.Encode(t, b.plaintext(), cc, true))
		}, want: chunkWant("crypt mode"), chunk: true},
		{name: "decrypt-fails", enc: true, mutate: func(t *testing.T, b *base) {
			raw, err := os.ReadFile(b.chunk())
			if err != nil {
				t.Fatal(err)
			}
			raw[len(raw)-1] ^= 1 // damage the ciphertext, keep the CRC valid
			binary.LittleEndian.PutUint32(raw[8:], crc32.ChecksumIEEE(raw[chunkstore.EncryptedHeaderSize:]))
			writeFile(t, b.chunk(), raw)
		}, want: chunkWant("decryption failed"), chunk: true},
		{name: "damaged-bad-and-tmp-files-ignored", mutate: func(t *testing.T, b *base) {
			good, err := os.ReadFile(b.chunk())
			if err != nil {
				t.Fatal(err)
			}
			remove(t, b.chunk())
			// .bad copies are salvaged only when they verify: these do not.
			flipped := append([]byte(nil), good...)
			flipped[len(flipped)-1] ^= 0xff
			writeFile(t, b.chunk()+".0.bad", flipped)
			writeFile(t, b.chunk()+".9.bad", flipped[:len(flipped)/2])
			writeFile(t, filepath.Join(filepath.Dir(b.chunk()), "."+filepath.Base(b.chunk())+".tmp123"), good)
			writeFile(t, b.chunk()+".using", good)
		}, want: chunkWant("not found"), chunk: true},
		// Keys.
		{name: "missing-key", enc: true, keyArgs: func(*base) []string { return nil }, noKey: true,
			want: func(b *base) []string { return []string{"missing key", b.cc.Fingerprint().String()} }},
		{name: "wrong-key", enc: true, keyArgs: func(b *base) []string { return []string{"--keyfile", b.otherKey} }, noKey: true,
			want: func(b *base) []string { return []string{"missing key", b.cc.Fingerprint().String(), b.otherKey} }},
		{name: "key-file-fingerprint-mismatch", enc: true, keyArgs: func(b *base) []string {
			raw, err := os.ReadFile(b.keyfile)
			if err != nil {
				t.Fatal(err)
			}
			kf, err := crypto.ParseKeyFile(raw)
			if err != nil {
				t.Fatal(err)
			}
			_, occ := fixture.Key(t, 22)
			kf.Fingerprint = occ.Fingerprint().String()
			js, err := kf.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			return []string{"--keyfile", fixture.WriteFile(t, t.TempDir(), "liar.json", js)}
			// A key file whose key belies its fingerprint is not opened:
			// no damage of the data (exit 3, not 1).
		}, noKey: true, want: func(*base) []string { return []string{"liar.json", "fingerprint", "not the key it names"} }},
		// Indexes and the manifest.
		{name: "archive-not-in-manifest", archive: "drive-scsi1", verifyOK: true, want: func(*base) []string {
			return []string{"not in manifest", "drive-scsi1.img.fidx", "drive-scsi0.img.fidx"}
		}},
		{name: "index-too-long", mutate: func(t *testing.T, b *base) {
			f, _ := os.OpenFile(b.fidx(), os.O_APPEND|os.O_WRONLY, 0)
			f.Write(make([]byte, 7))
			f.Close()
		}, want: func(b *base) []string { return []string{b.snap.Dir() + "/drive-scsi0.img.fidx", "bad index length"} }},
		{name: "index-too-short", mutate: func(t *testing.T, b *base) {
			st, _ := os.Stat(b.fidx())
			truncate(t, b.fidx(), st.Size()-32)
		}, want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "bad index length"} }},
		{name: "index-header-only", mutate: func(t *testing.T, b *base) { truncate(t, b.fidx(), 100) },
			want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "bad index length"} }},
		{name: "index-bad-magic", mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.fidx(), 0) },
			want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "bad index magic"} }},
		{name: "index-dynamic-magic", mutate: func(t *testing.T, b *base) {
			fixture.Patch(t, b.fidx(), 0, index.MagicDynamic[:])
		}, want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "bad index magic"} }},
		{name: "index-chunk-size-0", mutate: func(t *testing.T, b *base) { fixture.Patch(t, b.fidx(), 0x48, make([]byte, 8)) },
			want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "chunk size"} }},
		{name: "index-chunk-size-not-power-of-two", mutate: func(t *testing.T, b *base) {
			fixture.Patch(t, b.fidx(), 0x48, binary.LittleEndian.AppendUint64(nil, 3*65536))
		}, want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "chunk size", "196608"} }},
		{name: "index-csum-differs", mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.fidx(), 4096+32*5+7) },
			want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "checksum does not match manifest"} }},
		{name: "index-csum-differs-encrypted", enc: true, mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.fidx(), 4096+32*5+7) },
			want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "checksum does not match manifest"} }},
		{name: "index-size-differs-from-manifest", mutate: func(t *testing.T, b *base) {
			fixture.RewriteManifest(t, b.store, b.snap, func(m *index.Manifest) { m.Files[0].Size-- })
		}, want: func(b *base) []string { return []string{"drive-scsi0.img.fidx", "size does not match manifest"} }},
		{name: "index-missing", mutate: func(t *testing.T, b *base) { remove(t, b.fidx()) },
			want: func(b *base) []string { return []string{b.fidx(), "not found"} }},
		{name: "blob-missing", archive: "qemu-server.conf.blob", mutate: func(t *testing.T, b *base) { remove(t, b.blob()) },
			want: func(b *base) []string { return []string{b.blob(), "not found"} }},
		{name: "blob-damaged", archive: "qemu-server.conf.blob", mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.blob(), -1) },
			want: func(b *base) []string { return []string{"qemu-server.conf.blob", "checksum does not match manifest"} }},
		{name: "blob-encrypted-missing-key", enc: true, archive: "qemu-server.conf.blob", keyArgs: func(*base) []string { return nil }, noKey: true,
			want: func(b *base) []string { return []string{"missing key"} }},
		{name: "manifest-damaged", mutate: func(t *testing.T, b *base) { fixture.FlipByte(t, b.manifest(), -1) },
			want: func(b *base) []string { return []string{"index.json.blob", "CRC"} }},
		{name: "manifest-names-other-snapshot", mutate: func(t *testing.T, b *base) {
			fixture.RewriteManifest(t, b.store, b.snap, func(m *index.Manifest) { m.BackupID = "101" })
		}, want: func(b *base) []string { return []string{"index.json.blob", "vm/101"} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := bases[c.enc].clone(t)
			if c.mutate != nil {
				c.mutate(t, b)
			}
			keyArgs := b.keyArgs()
			if c.keyArgs != nil {
				keyArgs = c.keyArgs(b)
			}
			archive := c.archive
			if archive == "" {
				archive = "drive-scsi0"
			}
			target := filepath.Join(t.TempDir(), "target.raw")
			args := append(append([]string{"restore", "--store", b.store}, keyArgs...), snap0, archive, target)
			code := 1
			if c.noKey {
				code = 3
			}
			mustFail(t, code, c.want(b), args...)
			noFile(t, target)
			r := pbs(t, append(append([]string{"verify", "--store", b.store}, keyArgs...), snap0)...)
			if c.verifyOK {
				if r.code != 0 {
					t.Errorf("verify: want exit 0, got %v", r)
				}
				return
			}
			if r.code != code || strings.Contains(r.out, "verified 1 snapshot(s)") && !strings.Contains(r.out, "FAILED") {
				t.Errorf("verify: want exit %d and no success claim, got %v", code, r)
			}
			for _, w := range c.want(b) {
				if c.chunk && w == b.chunk() {
					continue // verify names chunks by digest and offsets, not by file
				}
				if !strings.Contains(r.out+r.err, w) {
					t.Errorf("verify output lacks %q: %v", w, r)
				}
			}
		})
	}
}

// TestVerifyDamagedArchive: two disks in one snapshot, one damaged in two
// chunks, each used at several offsets (one at 10, more than the 8 an
// error message lists): verify lists every damaged chunk with all its
// offsets and exits 1; the other disk verifies OK and still restores
// byte-exact; the failed restore names the chunk's first 8 ranges and the
// number of offsets, no more.
func TestVerifyDamagedArchive(t *testing.T) {
	const cs = 65536
	store := fixture.NewStore(t)
	dir := t.TempDir()
	good := fixture.Mixed(700<<10+3, 1)
	rep := fixture.Build(2, fixture.Region{Kind: fixture.Random, Len: cs})
	other := fixture.Build(3, fixture.Region{Kind: fixture.Text, Len: cs})
	// Chunk positions: other at 0 and 2, rep at 1 and 3..11.
	var bad []byte
	for _, p := range [][]byte{other, rep, other} {
		bad = append(bad, p...)
	}
	for range 9 {
		bad = append(bad, rep...)
	}
	bad = append(bad, fixture.Mixed(300<<10, 4)...)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64",
		"drive-scsi0.img:"+fixture.WriteFile(t, dir, "a.raw", good), "drive-scsi1.img:"+fixture.WriteFile(t, dir, "b.raw", bad))
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	_, ds := fixture.Digests(t, fixture.SnapPath(store, snap, "drive-scsi1.img.fidx"))
	// Damage chunk "other" (flipped byte) and chunk "rep" (removed).
	d0, d1 := ds[0], ds[1]
	offsets := func(d crypto.Digest) []uint64 {
		var o []uint64
		for i, x := range ds {
			if x == d {
				o = append(o, uint64(i)*cs)
			}
		}
		return o
	}
	if n0, n1 := len(offsets(d0)), len(offsets(d1)); n0 != 2 || n1 != 10 {
		t.Fatalf("image layout: chunk other at %d offsets, rep at %d; want 2 and 10", n0, n1)
	}
	fixture.FlipByte(t, fixture.ChunkPath(store, d0), -1)
	remove(t, fixture.ChunkPath(store, d1))

	r := pbs(t, "verify", "--store", store, "--output-format", "json")
	if r.code != 1 {
		t.Fatalf("verify: want exit 1: %v", r)
	}
	var rep2 verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep2); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if rep2.OK || len(rep2.Snapshots) != 1 {
		t.Fatalf("report: %+v", rep2)
	}
	arch := map[string]verify.ArchiveResult{}
	for _, a := range rep2.Snapshots[0].Archives {
		arch[a.Archive] = a
	}
	if a := arch["drive-scsi0.img.fidx"]; !a.OK || a.ChunksChecked == 0 {
		t.Errorf("undamaged disk: %+v", a)
	}
	if a := arch["qemu-server.conf.blob"]; len(arch) != 2 || a.Archive != "" {
		t.Errorf("archives: %+v", arch)
	}
	a := arch["drive-scsi1.img.fidx"]
	if a.OK || len(a.Damaged) != 2 {
		t.Fatalf("damaged disk: %+v", a)
	}
	for _, dc := range a.Damaged {
		var want []uint64
		switch dc.Digest {
		case d0.String():
			want = offsets(d0)
		case d1.String():
			want = offsets(d1)
		default:
			t.Errorf("unexpected damaged chunk %s", dc.Digest)
			continue
		}
		// The report lists the first verify.MaxOffsets offsets and counts all.
		count := 0
		if len(want) > verify.MaxOffsets {
			want, count = want[:verify.MaxOffsets], len(want)
		}
		if fmt.Sprint(dc.Offsets) != fmt.Sprint(want) || dc.OffsetCount != count || dc.Length != 65536 || dc.Error == "" {
			t.Errorf("damaged chunk %s: offsets %v (%d) length %d (%s), want %v (%d)", dc.Digest, dc.Offsets, dc.OffsetCount, dc.Length, dc.Error, want, count)
		}
	}
	// Text output names both chunks and their first verify.MaxOffsets
	// offset ranges, and how many there are beyond those.
	r = pbs(t, "verify", "--store", store, snap0)
	if r.code != 1 {
		t.Fatalf("verify: %v", r)
	}
	for _, d := range []crypto.Digest{d0, d1} {
		if !strings.Contains(r.out, d.String()) {
			t.Errorf("verify output lacks %s", d)
		}
		offs := offsets(d)
		if len(offs) > verify.MaxOffsets {
			if more := fmt.Sprintf("… (%d offsets)", len(offs)); !strings.Contains(r.out, more) {
				t.Errorf("verify output lacks %q", more)
			}
			offs = offs[:verify.MaxOffsets]
		}
		for _, o := range offs {
			if rng := fmt.Sprintf("[%d,%d)", o, o+65536); !strings.Contains(r.out, rng) {
				t.Errorf("verify output lacks range %s", rng)
			}
		}
	}
	if !strings.Contains(r.out, "drive-scsi0.img.fidx") || strings.Count(r.out, "FAILED") < 2 {
		t.Errorf("verify text output:\n%s", r.out)
	}
	target := filepath.Join(t.TempDir(), "a.raw")
	restoreJSON(t, "--store", store, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, good)
	// Chunk "other" repaired: the restore fails on "rep" alone, whose
	// message lists its first 8 ranges and then the count.
	fixture.FlipByte(t, fixture.ChunkPath(store, d0), -1)
	t2 := filepath.Join(t.TempDir(), "b.raw")
	var want []string
	for _, o := range offsets(d1)[:8] {
		want = append(want, fmt.Sprintf("[%d,%d)", o, o+cs))
	}
	r = mustFail(t, 1, append(want, "drive-scsi1.img.fidx", d1.String(), "… (10 offsets)"), "restore", "--store", store, snap0, "drive-scsi1", t2)
	for _, o := range offsets(d1)[8:] {
		if rng := fmt.Sprintf("[%d,%d)", o, o+cs); strings.Contains(r.err, rng) {
			t.Errorf("restore error lists range %s past the cut-off of 8: %v", rng, r)
		}
	}
	noFile(t, t2)
}

// TestUsage: usage errors exit 2 with a message on stderr naming what is
// wrong.
func TestUsage(t *testing.T) {
	store := fixture.NewStore(t)
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{}, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"restore", snap0, "drive-scsi0", "/tmp/x"}, "restore: --store is required"},
		{[]string{"restore", "--store", store, snap0, "drive-scsi0"}, "want SNAPSHOT ARCHIVE TARGET, got 2 argument(s)"},
		{[]string{"restore", "--store", store, snap0, "drive-scsi0", "/tmp/x", "extra"}, "want SNAPSHOT ARCHIVE TARGET, got 4 argument(s)"},
		{[]string{"restore", "--store", store, "--output-format", "yaml", snap0, "d", "/tmp/x"}, `--output-format must be text, json or json-pretty, not "yaml"`},
		{[]string{"restore", "--store", store, "--ns", "a//b", snap0, "drive-scsi0", "/tmp/x"}, `--ns: bad name: namespace "a//b"`},
		{[]string{"restore", "--store", store, "--ns", "-bad", snap0, "drive-scsi0", "/tmp/x"}, `--ns: bad name: namespace "-bad"`},
		{[]string{"restore", "--store", store, "--ns", "a/b/c/d/e/f/g/h", snap0, "drive-scsi0", "/tmp/x"}, "has 8 levels, at most 7"},
		{[]string{"restore", "--store", store, "-j", "0", snap0, "drive-scsi0", "/tmp/x"}, "--jobs must be 1..1024, not 0"},
		{[]string{"restore", "--store", store, "--no-such-flag", snap0, "drive-scsi0", "/tmp/x"}, "unknown flag: --no-such-flag"},
		{[]string{"verify", snap0}, "verify: --store is required"},
		{[]string{"verify", "--store", store, snap0, "vm/101"}, "want at most one SNAPSHOT, got 2"},
		{[]string{"verify", "--store", store, "--output-format", "xml"}, `--output-format must be text, json or json-pretty, not "xml"`},
		{[]string{"verify", "--store", store, "--ns", "a//b"}, `--ns: bad name: namespace "a//b"`},
		{[]string{"snapshots"}, "snapshots: --store is required"},
		{[]string{"snapshots", "--store", store, "extra"}, `GROUP "extra": want TYPE/ID`},
		{[]string{"snapshots", "--store", store, "vm/100", "extra"}, "snapshots takes at most one GROUP"},
		{[]string{"snapshots", "--store", store, "--ns", "bad name"}, `--ns: bad name: namespace "bad name"`},
		{[]string{"snapshots", "--store", store, "--output-format", "csv"}, `--output-format must be text, json or json-pretty, not "csv"`},
		{[]string{"backup", "--store", store}, "want at least one NAME.img:PATH"},
		{[]string{"backup", "--store", store, "drive-scsi0.qcow2:/tmp/x"}, `backup spec "drive-scsi0.qcow2:/tmp/x": archive name must end in .img`},
		{[]string{"backup", "--store", store, "nocolon"}, `backup spec "nocolon": want NAME.img:PATH`},
		{[]string{"backup", "--store", store, "--crypt-mode", "bogus", "drive-scsi0.img:/tmp/x"}, `--crypt-mode must be none, encrypt or sign-only, not "bogus"`},
		{[]string{"backup", "--store", store, "--crypt-mode", "encrypt", "drive-scsi0.img:/tmp/x"}, "--crypt-mode encrypt needs --keyfile"},
		{[]string{"backup", "--store", store, "--backup-time", "yesterday", "drive-scsi0.img:/tmp/x"}, `--backup-time "yesterday": want RFC 3339`},
		{[]string{"backup", "--store", store, "--ns", "x//y", "drive-scsi0.img:/tmp/x"}, `--ns: bad name: namespace "x//y"`},
		{[]string{"backup", "--store", store, "--backup-type", "vmx", "drive-scsi0.img:/tmp/x"}, `backup type "vmx" is not vm, ct or host`},
		{[]string{"backup", "drive-scsi0.img:/tmp/x"}, "backup: --store is required"},
		{[]string{"key"}, "want a key command: create, show"},
		{[]string{"key", "destroy"}, `unknown key command "destroy"`},
		{[]string{"key", "create", "--kdf", "md5", filepath.Join(t.TempDir(), "k.json")}, `--kdf must be scrypt, pbkdf2 or none, not "md5"`},
		{[]string{"key", "show", "a", "b"}, "want at most one PATH"},
		{[]string{"restor", "--store", store}, `unknown command "restor" (did you mean restore or restore-guest?)`},
		{[]string{"--store", store}, "want a command before --store"},
		{[]string{"help", "frobnicate"}, `no help for "frobnicate"`},
		{[]string{"report"}, "want a report command: merge"},
		{[]string{"report", "split"}, `unknown report command "split"`},
		{[]string{"completion"}, "want a shell: bash, zsh, fish or powershell"},
		{[]string{"completion", "tcsh"}, `unknown completion command "tcsh" (want bash, fish, powershell or zsh)`},
		{[]string{"report", "merge", filepath.Join(t.TempDir(), "nosuch.json")}, "nosuch.json: not found"},
		{[]string{"report", "merge", "--s3-path-style", "false", "a.json"}, "--s3-path-style takes its value after '='"},
		{[]string{"completion", "bash", "extra"}, `unknown command "extra"`},
		{[]string{"", "restore"}, `unknown command ""`},
		{[]string{"man", "--output-format", "yaml", t.TempDir()}, `--output-format must be text, json or json-pretty, not "yaml"`},
		{[]string{"snapshots", "-store", store}, "(did you mean --store?)"},
		{[]string{"snapshots", "--stor", store}, "unknown flag: --stor (did you mean --store?)"},
		{[]string{"restore", "--fetcher=4", "--store", store, snap0, "d", "/tmp/x"}, "(did you mean --fetchers?)"},
		{[]string{"key", "create-master-key", "--output-format", "yaml"}, `--output-format must be text, json or json-pretty, not "yaml"`},
		{[]string{"key", "change-passphrase", "--output-format", "yaml"}, `--output-format must be text, json or json-pretty, not "yaml"`},
		{[]string{"key", "import-with-master-key", "--output-format", "yaml", "a", "b"}, `--output-format must be text, json or json-pretty, not "yaml"`},
		{[]string{"backup", "--store", store, "drive-scsi0.img:/dev/zero"}, "is a device, not a regular file or block device"},
		{[]string{"report", "merge", "/dev/null"}, "is a device, not a regular file"},
		{[]string{"__complete"}, "requires at least 1 arg"},
		{[]string{"snapshots", "--a\x1b[31m"}, `unknown flag: --a\x1b[31m`},
		{[]string{"backup", "--store", store, "a b.img:/tmp/x"}, "want letters, digits, '_' and '-'"},
		{[]string{"backup", "--store", store, "caf\u00e9.img:/tmp/x"}, `"caf\u00e9.img"`},
		{[]string{"backup", "--store", store, ".img:/tmp/x"}, "want letters, digits"},
		{[]string{"verify", "--store", store, "--report", "-"}, "--report -: give a file path"},
		{[]string{"man"}, "want DIR"},
		{[]string{"man", filepath.Join(t.TempDir(), "nosuch")}, "nosuch: no such directory"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, "_"), func(t *testing.T) {
			r := pbs(t, c.args...)
			if r.code != 2 {
				t.Errorf("want exit 2 (usage), got %v", r)
			}
			if !strings.Contains(r.err, c.want) {
				t.Errorf("stderr lacks %q: %v", c.want, r)
			}
		})
	}
	for _, args := range [][]string{{"--help"}, {"version"}, {"restore", "--help"}} {
		if r := pbs(t, args...); r.code != 0 {
			t.Errorf("%v", r)
		}
	}
}

// TestBareValueNotMistaken: only a bare --s3-path-style directly followed by
// one of its values is refused; a TARGET that happens to be named "false"
// after --s3-path-style=true, or after "--", is restored to.
func TestBareValueNotMistaken(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(3)
	backupImage(t, store, data)
	t.Chdir(t.TempDir())
	mustOK(t, "restore", "--store", store, "--s3-path-style=true", snap0, "drive-scsi0", "false")
	fixture.Equal(t, "false", data)
	mustOK(t, "restore", "--store", store, "--s3-path-style", "--", snap0, "drive-scsi0", "auto")
	fixture.Equal(t, "auto", data)
	mustFail(t, 2, []string{"--s3-path-style=true"}, "restore", "--store", store, "--s3-path-style", "true", snap0, "drive-scsi0", "x")
	mustFail(t, 2, []string{"--s3-path-style=off"}, "restore", "--store", store, "--s3-path-style", "off", snap0, "drive-scsi0", "x")
}
