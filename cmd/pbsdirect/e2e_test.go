package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/restore"
)

// result is the outcome of one in-process pbsdirect command line.
type result struct {
	code     int
	out, err string
	args     []string
}

// pbs runs pbsdirect in-process with args.
func pbs(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return result{code: code, out: out.String(), err: errb.String(), args: args}
}

func (r result) String() string {
	return fmt.Sprintf("pbsdirect %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.out, r.err)
}

// mustOK runs args and fails the test unless it exits 0.
func mustOK(t *testing.T, args ...string) result {
	t.Helper()
	r := pbs(t, args...)
	if r.code != 0 {
		t.Fatalf("want exit 0, got %v", r)
	}
	return r
}

// mustFail runs args and fails the test unless it exits with code and its
// stderr contains every string of want.
func mustFail(t *testing.T, code int, want []string, args ...string) result {
	t.Helper()
	r := pbs(t, args...)
	if r.code != code {
		t.Fatalf("want exit %d, got %v", code, r)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			t.Errorf("stderr lacks %q: %v", w, r)
		}
	}
	for _, claim := range []string{"verified and synced", "restored "} {
		if strings.Contains(r.out, claim) {
			t.Errorf("failed run claims success (%q): %v", claim, r)
		}
	}
	return r
}

const (
	t0str = "2026-11-29T10:00:00Z"
	snap0 = "vm/100/" + t0str
)

// backupImage backs up name.img (data) into store with the CLI as vm/100 at
// t0str unless extra overrides flags, and returns the image path.
func backupImage(t *testing.T, store string, data []byte, extra ...string) string {
	t.Helper()
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	args := []string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str}
	args = append(args, extra...)
	args = append(args, "drive-scsi0.img:"+img)
	mustOK(t, args...)
	return img
}

func restoreJSON(t *testing.T, args ...string) restore.Summary {
	t.Helper()
	r := mustOK(t, append([]string{"restore", "--output-format", "json"}, args...)...)
	var s restore.Summary
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("restore JSON: %v\n%s", err, r.out)
	}
	return s
}

// chunkMagics returns how many chunk files of the store start with each magic.
func chunkMagics(t *testing.T, store string) map[[8]byte]int {
	t.Helper()
	out := map[[8]byte]int{}
	err := filepath.WalkDir(filepath.Join(store, ".chunks"), func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var m [8]byte
		copy(m[:], b)
		out[m]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var zero4M = "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"

// zeroMiddle is an image with a 9 MiB zero run in the middle, so zero chunks
// occur for every chunk size.
func zeroMiddle(seed uint64) []byte {
	return fixture.Build(seed,
		fixture.Region{Kind: fixture.Random, Len: 1<<20 + 5},
		fixture.Region{Kind: fixture.Zero, Len: 9 << 20},
		fixture.Region{Kind: fixture.Text, Len: 2<<20 + 4091})
}

// TestRoundTrip backs up, restores and verifies images of several sizes and
// chunk sizes, plain and encrypted, and checks the restored bytes exactly.
func TestRoundTrip(t *testing.T) {
	keyDir := t.TempDir()
	key, _ := fixture.Key(t, 1)
	keyfile := fixture.KeyFile(t, keyDir, "key.json", key, crypto.KDFNone, "")
	text := func(n int64) []byte { return fixture.Build(5, fixture.Region{Kind: fixture.Text, Len: n}) }
	random := func(n int64) []byte { return fixture.Build(6, fixture.Region{Kind: fixture.Random, Len: n}) }
	type tc struct {
		name      string
		data      []byte
		chunkKiB  int
		encrypt   bool
		zeroChunk bool                  // the image has zero chunks
		magics    []chunkstore.BlobKind // chunk kinds that must occur
	}
	var cases []tc
	for _, size := range []int64{540672, 5251072, 4194305} {
		for _, cs := range []int{64, 1024, 4096} {
			cases = append(cases, tc{name: fmt.Sprintf("mixed-%d-%dK", size, cs), data: fixture.Mixed(size, uint64(size)), chunkKiB: cs})
		}
	}
	cases = append(cases,
		tc{name: "zero-middle-4M", data: zeroMiddle(1), chunkKiB: 4096, zeroChunk: true},
		tc{name: "zero-middle-64K", data: zeroMiddle(2), chunkKiB: 64, zeroChunk: true},
		tc{name: "zero-middle-1M-encrypted", data: zeroMiddle(3), chunkKiB: 1024, encrypt: true, zeroChunk: true},
		tc{name: "encrypted-compressed", data: text(3<<20 + 77), chunkKiB: 1024, encrypt: true,
			magics: []chunkstore.BlobKind{chunkstore.KindEncryptedCompressed}},
		tc{name: "encrypted-uncompressed", data: random(2<<20 + 4096), chunkKiB: 512, encrypt: true,
			magics: []chunkstore.BlobKind{chunkstore.KindEncrypted}},
		tc{name: "encrypted-mixed-5251072", data: fixture.Mixed(5251072, 9), chunkKiB: 4096, encrypt: true},
		tc{name: "plain-compressed", data: text(1 << 20), chunkKiB: 256, magics: []chunkstore.BlobKind{chunkstore.KindCompressed}},
		tc{name: "plain-uncompressed", data: random(1 << 20), chunkKiB: 256, magics: []chunkstore.BlobKind{chunkstore.KindUncompressed}},
	)
	magicOf := map[chunkstore.BlobKind][8]byte{
		chunkstore.KindUncompressed: chunkstore.MagicUncompressed, chunkstore.KindCompressed: chunkstore.MagicCompressed,
		chunkstore.KindEncrypted: chunkstore.MagicEncrypted, chunkstore.KindEncryptedCompressed: chunkstore.MagicEncryptedCompressed,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store := fixture.NewStore(t)
			flags := []string{"--chunk-size", fmt.Sprint(c.chunkKiB)}
			var keyFlags []string
			if c.encrypt {
				keyFlags = []string{"--keyfile", keyfile}
			}
			backupImage(t, store, c.data, append(flags, keyFlags...)...)
			target := filepath.Join(t.TempDir(), "restored.raw")
			s := restoreJSON(t, append(append([]string{"--store", store}, keyFlags...), snap0, "drive-scsi0", target)...)
			fixture.Equal(t, target, c.data)
			if s.Size != uint64(len(c.data)) || s.Encrypted != c.encrypt {
				t.Errorf("summary size %d encrypted %v, want %d %v", s.Size, s.Encrypted, len(c.data), c.encrypt)
			}
			if s.DataBytes+s.ZeroBytes != s.Size {
				t.Errorf("data-bytes %d + zero-bytes %d != size %d", s.DataBytes, s.ZeroBytes, s.Size)
			}
			if c.zeroChunk && (s.ZeroChunks == 0 || s.ZeroBytes == 0) {
				t.Errorf("image has zero chunks, summary says %d zero chunks (%d bytes)", s.ZeroChunks, s.ZeroBytes)
			}
			if s.ZeroBytes != s.ZeroChunks*uint64(c.chunkKiB)<<10 {
				t.Errorf("zero-bytes %d != zero-chunks %d × chunk size", s.ZeroBytes, s.ZeroChunks)
			}
			mags := chunkMagics(t, store)
			for _, k := range c.magics {
				if mags[magicOf[k]] == 0 {
					t.Errorf("no %s chunk in the store (%v)", k, mags)
				}
			}
			if c.encrypt {
				if n := mags[chunkstore.MagicUncompressed] + mags[chunkstore.MagicCompressed]; n != 0 {
					t.Errorf("encrypted backup wrote %d plain chunks", n)
				}
			}
			mustOK(t, append(append([]string{"verify", "--store", store}, keyFlags...), snap0)...)
		})
	}
}

// TestPassphraseKey uses scrypt and pbkdf2 key files created with 'key
// create' and a passphrase from PBS_ENCRYPTION_PASSWORD; a wrong passphrase
// fails with exit 3 (no damage: retry with the right one).
func TestPassphraseKey(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Mixed(1<<20+333, 11)
	for _, kdf := range []string{"scrypt", "pbkdf2"} {
		t.Run(kdf, func(t *testing.T) {
			t.Setenv("PBS_ENCRYPTION_PASSWORD", "correct horse")
			keyfile := filepath.Join(t.TempDir(), "key.json")
			mustOK(t, "key", "create", "--kdf", kdf, keyfile)
			r := mustOK(t, "key", "show", "--verify", "--output-format", "json", keyfile)
			var info keys.Info
			if err := json.Unmarshal([]byte(r.out), &info); err != nil || info.KDF != kdf || !info.Verified {
				t.Fatalf("key show: %+v %v", info, err)
			}
			store := fixture.NewStore(t)
			backupImage(t, store, data, "--chunk-size", "256", "--keyfile", keyfile)
			target := filepath.Join(t.TempDir(), "out.raw")
			s := restoreJSON(t, "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0.img.fidx", target)
			fixture.Equal(t, target, data)
			if !s.Encrypted {
				t.Error("summary does not say encrypted")
			}
			t.Setenv("PBS_ENCRYPTION_PASSWORD", "wrong horse")
			target2 := filepath.Join(t.TempDir(), "out2.raw")
			// A wrong passphrase is no damage: exit 3, not 1.
			mustFail(t, 3, []string{keyfile, "wrong passphrase"}, "restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target2)
			noFile(t, target2)
			mustFail(t, 3, []string{"wrong passphrase"}, "verify", "--store", store, "--keyfile", keyfile)
		})
	}
}

func noFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("%s was left behind after a failed restore", p)
	}
}

// TestSignOnly: a sign-only backup writes plain chunks and a signed
// manifest; it restores and verifies with its key, and fails with a wrong,
// missing or tampered one.
func TestSignOnly(t *testing.T) {
	dir := t.TempDir()
	key, cc := fixture.Key(t, 2)
	keyfile := fixture.KeyFile(t, dir, "key.json", key, crypto.KDFNone, "")
	otherKey, _ := fixture.Key(t, 3)
	other := fixture.KeyFile(t, dir, "other.json", otherKey, crypto.KDFNone, "")
	store := fixture.NewStore(t)
	data := fixture.Mixed(3<<20+1, 12)
	backupImage(t, store, data, "--chunk-size", "1024", "--crypt-mode", "sign-only", "--keyfile", keyfile)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	m := fixture.Manifest(t, store, snap)
	if m.Signature == nil || m.Files[0].CryptMode != index.CryptSignOnly {
		t.Fatalf("manifest: signature %v, crypt mode %s", m.Signature, m.Files[0].CryptMode)
	}
	if err := m.Check(cc); err != nil {
		t.Fatal(err)
	}
	mags := chunkMagics(t, store)
	if mags[chunkstore.MagicEncrypted]+mags[chunkstore.MagicEncryptedCompressed] != 0 {
		t.Errorf("sign-only wrote encrypted chunks: %v", mags)
	}
	target := filepath.Join(t.TempDir(), "out.raw")
	s := restoreJSON(t, "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, data)
	if s.Encrypted {
		t.Error("sign-only restore reported as encrypted")
	}
	mustOK(t, "verify", "--store", store, "--keyfile", keyfile, snap0)

	bad := filepath.Join(t.TempDir(), "bad.raw")
	// Another key, or none: not this snapshot's key, no damage (exit 3);
	// its data is only signed, so --crypt-mode none is suggested.
	// The status is said once: "missing key: the manifest names key …".
	mustFail(t, 3, []string{"missing key", cc.Fingerprint().String(), "--crypt-mode none"}, "restore", "--store", store, "--keyfile", other, snap0, "drive-scsi0", bad)
	noFile(t, bad)
	mustFail(t, 3, []string{"missing key", "--crypt-mode none"}, "restore", "--store", store, snap0, "drive-scsi0", bad)
	noFile(t, bad)
	r := mustFail(t, 3, nil, "verify", "--store", store, "--keyfile", other, snap0)
	if !strings.Contains(r.out+r.err, "key missing") {
		t.Errorf("verify with a wrong key does not say so: %v", r)
	}
	// A signed manifest changed after signing is refused.
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) { m.Files[0].CryptMode = index.CryptNone })
	mustFail(t, 1, []string{"signature"}, "restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", bad)
	noFile(t, bad)
}

// TestNamespaces: snapshots are listed and resolved only in their namespace.
func TestNamespaces(t *testing.T) {
	store := fixture.NewStore(t)
	images := map[string][]byte{"": fixture.Mixed(300<<10, 1), "prod": fixture.Mixed(300<<10, 2), "prod/db": fixture.Mixed(300<<10, 3), "prod/db/x_1.y-z": fixture.Mixed(200<<10, 4)}
	for ns, data := range images {
		backupImage(t, store, data, "--ns", ns, "--chunk-size", "64")
	}
	if _, err := os.Stat(filepath.Join(store, "ns", "prod", "ns", "db", "vm", "100", t0str, "index.json.blob")); err != nil {
		t.Fatalf("nested namespace layout: %v", err)
	}
	for ns, data := range images {
		r := mustOK(t, "snapshots", "--store", store, "--ns", ns, "--output-format", "json")
		var list []snapshotEntry
		if err := json.Unmarshal([]byte(r.out), &list); err != nil {
			t.Fatal(err)
		}
		want := fixture.Snap(t, ns, "vm", "100", fixture.T0).String()
		if len(list) != 1 || list[0].Snapshot != want || list[0].Namespace != ns || list[0].BackupID != "100" {
			t.Errorf("ns %q: snapshots %+v, want exactly %s", ns, list, want)
		}
		target := filepath.Join(t.TempDir(), "out.raw")
		restoreJSON(t, "--store", store, "--ns", ns, "vm/100", "drive-scsi0", target)
		fixture.Equal(t, target, data)
		mustOK(t, "verify", "--store", store, "--ns", ns)
	}
	// The snapshot names printed by 'snapshots' (with their ns/ prefix)
	// restore that namespace's snapshot, not the root one of the same name.
	for ns, data := range images {
		ref := fixture.Snap(t, ns, "vm", "100", fixture.T0).String()
		target := filepath.Join(t.TempDir(), "byref.raw")
		s := restoreJSON(t, "--store", store, ref, "drive-scsi0", target)
		fixture.Equal(t, target, data)
		if s.Snapshot != ref {
			t.Errorf("%s restored as %s", ref, s.Snapshot)
		}
	}
	mustFail(t, 1, []string{"ns/prod/vm/100"}, "restore", "--store", store, "--ns", "prod/db", "ns/prod/vm/100", "drive-scsi0", filepath.Join(t.TempDir(), "conflict.raw"))
	// Not visible from another namespace.
	store2 := fixture.NewStore(t)
	backupImage(t, store2, images["prod"], "--ns", "prod/db")
	target := filepath.Join(t.TempDir(), "x.raw")
	mustFail(t, 1, []string{"no such snapshot"}, "restore", "--store", store2, snap0, "drive-scsi0", target)
	mustFail(t, 1, []string{"no such snapshot"}, "restore", "--store", store2, "--ns", "prod", "vm/100", "drive-scsi0", target)
	noFile(t, target)
	r := mustOK(t, "snapshots", "--store", store2, "--output-format", "json")
	if strings.TrimSpace(r.out) != "[]" {
		t.Errorf("root namespace lists child snapshots: %s", r.out)
	}
}

// TestDedup: an image whose chunks repeat fetches each unique chunk once and
// reports the dedup hits.
func TestDedup(t *testing.T) {
	a := fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 64 << 10})
	b := fixture.Build(2, fixture.Region{Kind: fixture.Text, Len: 64 << 10})
	z := make([]byte, 64<<10)
	var img []byte
	for _, p := range []string{"a", "b", "a", "a", "z", "b", "a", "z", "z", "a", "b"} {
		img = append(img, map[string][]byte{"a": a, "b": b, "z": z}[p]...)
	}
	img = append(img, a[:1000]...) // short last chunk, its own digest
	store := fixture.NewStore(t)
	backupImage(t, store, img, "--chunk-size", "64")
	target := filepath.Join(t.TempDir(), "out.raw")
	s := restoreJSON(t, "--store", store, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, img)
	if s.ChunksFetched != 3 || s.DedupHits != 6 || s.ZeroChunks != 3 {
		t.Errorf("chunks-fetched %d dedup-hits %d zero-chunks %d, want 3, 6, 3", s.ChunksFetched, s.DedupHits, s.ZeroChunks)
	}
	if s.DataBytes != uint64(len(img))-3*64<<10 || s.ZeroBytes != 3*64<<10 {
		t.Errorf("data-bytes %d zero-bytes %d", s.DataBytes, s.ZeroBytes)
	}
}

// TestZeroChunkAbsent: the 4 MiB zero chunk deleted from the store is never
// needed by restore, which stays byte-exact; verify names it missing.
func TestZeroChunkAbsent(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(7)
	backupImage(t, store, data)
	zp := filepath.Join(store, ".chunks", "bb9f", zero4M)
	if _, err := os.Stat(zp); err != nil {
		t.Fatalf("backup did not store the zero chunk: %v", err)
	}
	if err := os.Remove(zp); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "out.raw")
	s := restoreJSON(t, "--store", store, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, data)
	if s.ZeroChunks != 1 || s.ChunksFetched != 3 {
		t.Errorf("zero-chunks %d chunks-fetched %d, want 1 and 3", s.ZeroChunks, s.ChunksFetched)
	}
	// Restore never needs it, but other clients do: verify checks the zero
	// chunk like any other and finds it missing.
	r := mustFail(t, 1, nil, "verify", "--store", store)
	if !strings.Contains(r.out, "missing chunk "+zero4M) {
		t.Errorf("verify does not name the missing zero chunk: %v", r)
	}
}

// TestLatestAndUnfinished: TYPE/ID resolves to the latest finished snapshot;
// an unfinished snapshot (no index.json.blob) is hidden and not resolvable.
func TestLatestAndUnfinished(t *testing.T) {
	store := fixture.NewStore(t)
	old, latest := fixture.Mixed(200<<10, 1), fixture.Mixed(200<<10, 2)
	backupImage(t, store, old, "--chunk-size", "64")
	img := fixture.WriteFile(t, t.TempDir(), "new.raw", latest)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", "2026-11-29T11:00:00Z", "--chunk-size", "64", "drive-scsi0.img:"+img)
	// Another group must not interfere.
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "101", "--backup-time", "2026-11-30T00:00:00Z", "--chunk-size", "64", "drive-scsi0.img:"+img)
	// Unfinished, newest: a copy of the latest snapshot without its manifest.
	unf := filepath.Join(store, "vm", "100", "2026-11-29T12:00:00Z")
	fixture.CopyDir(t, filepath.Join(store, "vm", "100", "2026-11-29T11:00:00Z"), unf)
	if err := os.Remove(filepath.Join(unf, "index.json.blob")); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, "snapshots", "--store", store, "--output-format", "json")
	var list []snapshotEntry
	if err := json.Unmarshal([]byte(r.out), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Snapshot)
	}
	want := []string{"vm/100/2026-11-29T10:00:00Z", "vm/100/2026-11-29T11:00:00Z", "vm/101/2026-11-30T00:00:00Z"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("snapshots %v, want %v", names, want)
	}
	target := filepath.Join(t.TempDir(), "out.raw")
	s := restoreJSON(t, "--store", store, "vm/100", "drive-scsi0", target)
	fixture.Equal(t, target, latest)
	if s.Snapshot != "vm/100/2026-11-29T11:00:00Z" {
		t.Errorf("vm/100 resolved to %s", s.Snapshot)
	}
	t2 := filepath.Join(t.TempDir(), "unf.raw")
	mustFail(t, 1, []string{"no such snapshot", "2026-11-29T12:00:00Z"}, "restore", "--store", store, "vm/100/2026-11-29T12:00:00Z", "drive-scsi0", t2)
	noFile(t, t2)
	mustFail(t, 1, []string{"no such snapshot"}, "restore", "--store", store, "vm/102", "drive-scsi0", t2)
	noFile(t, t2)
	// verify of the whole namespace skips the unfinished snapshot.
	r = mustOK(t, "verify", "--store", store)
	if strings.Contains(r.out, "12:00:00Z") {
		t.Errorf("verify looked at the unfinished snapshot:\n%s", r.out)
	}
}

// TestForce: restoring onto an existing file needs --force, leaves the file
// alone without it, and with it matches exactly even where the old file had
// garbage under zero chunks and was longer than the image.
func TestForce(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(9)
	backupImage(t, store, data, "--chunk-size", "1024")
	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x55}, (len(data)+(3<<20))/5)
	for _, noDirect := range []bool{false, true} {
		target := fixture.WriteFile(t, t.TempDir(), "existing.raw", garbage)
		args := []string{"--store", store, snap0, "drive-scsi0", target}
		if noDirect {
			args = append([]string{"--no-direct"}, args...)
		}
		mustFail(t, 2, []string{target, "--force"}, append([]string{"restore"}, args...)...)
		fixture.Equal(t, target, garbage) // untouched, not removed
		s := restoreJSON(t, append([]string{"--force"}, args...)...)
		fixture.Equal(t, target, data)
		if s.ZeroChunks == 0 {
			t.Error("no zero chunks in the zero-middle image")
		}
	}
}

// TestBlockDevice restores onto a loop device pre-filled with garbage, with
// and without --assume-zeroed.
func TestBlockDevice(t *testing.T) {
	fixture.SkipIfShort(t)
	store := fixture.NewStore(t)
	data := zeroMiddle(10)
	data = data[:12<<20+512] // whole sectors, short last chunk
	backupImage(t, store, data, "--chunk-size", "1024")
	devSize := int64(len(data)) + 1<<20
	garbage := []byte{0xa5, 0x5a, 0x01}
	readDev := func(dev string) []byte {
		f, err := os.Open(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, len(data))
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("garbage", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, devSize, garbage)
		restoreJSON(t, "--store", store, snap0, "drive-scsi0", dev)
		fixture.EqualBytes(t, dev, readDev(dev), data)
	})
	t.Run("assume-zeroed", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, devSize, []byte{0})
		restoreJSON(t, "--store", store, "--assume-zeroed", snap0, "drive-scsi0", dev)
		fixture.EqualBytes(t, dev, readDev(dev), data)
	})
	t.Run("assume-zeroed-skips-zeroing", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, devSize, garbage)
		s := restoreJSON(t, "--store", store, "--assume-zeroed", snap0, "drive-scsi0", dev)
		got := readDev(dev)
		// Data regions are exact; a zero chunk was trusted to be zero already.
		if s.ZeroChunks == 0 {
			t.Fatal("no zero chunks")
		}
		z := 2 << 20 // chunk [2 MiB, 3 MiB) is all zeros
		if bytes.Equal(got[z:z+1<<20], make([]byte, 1<<20)) {
			t.Error("--assume-zeroed zeroed a zero chunk anyway")
		}
		fixture.EqualBytes(t, "data region", got[:1<<20], data[:1<<20])
		fixture.EqualBytes(t, "data region", got[10<<20:], data[10<<20:])
	})
	t.Run("too-small", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, 1<<20, garbage)
		mustFail(t, 2, []string{dev, "block device"}, "restore", "--store", store, snap0, "drive-scsi0", dev)
	})
	// A device that is mounted, or held open exclusively by another
	// program, is refused (even with --force) and left as it was.
	t.Run("mounted", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, devSize, []byte{0})
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
			fixture.SkipOrFail(t, "mkfs.ext4 %s: %v: %s", dev, err, out)
		}
		mnt := t.TempDir()
		if out, err := exec.Command("mount", dev, mnt).CombinedOutput(); err != nil {
			fixture.SkipOrFail(t, "mount %s failed (needs root): %v: %s", dev, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				t.Errorf("umount: %v: %s", err, out)
			}
		})
		before := readDev(dev)
		r := pbs(t, "restore", "--force", "--store", store, snap0, "drive-scsi0", dev)
		if r.code == 0 || !strings.Contains(r.err, dev) || !strings.Contains(r.err, "busy") {
			t.Errorf("restore onto a mounted device: want a failure naming it busy: %v", r)
		}
		fixture.EqualBytes(t, dev, readDev(dev), before)
	})
	t.Run("held", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, devSize, garbage)
		holder, err := os.OpenFile(dev, os.O_RDWR|os.O_EXCL, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		before := readDev(dev)
		r := pbs(t, "restore", "--force", "--store", store, snap0, "drive-scsi0", dev)
		if r.code == 0 || !strings.Contains(r.err, dev) || !strings.Contains(r.err, "busy") {
			t.Errorf("restore onto a device held open exclusively: want a failure naming it busy: %v", r)
		}
		fixture.EqualBytes(t, dev, readDev(dev), before)
	})
}

// TestFullFileSystem: on ext4, space for the image's data is reserved
// first, so a restore that cannot fit fails at once, before any chunk is
// fetched, names the target and leaves nothing behind, while zero ranges
// need no room (a sparse image larger than the file system fits). On btrfs
// with compression nothing is reserved (reserved ranges would be written
// uncompressed), so a compressible image larger than the free space still
// fits.
func TestFullFileSystem(t *testing.T) {
	fixture.SkipIfShort(t)
	for _, c := range []struct {
		fs       string
		mkfs     []string // command and flags; the device is appended
		size     int64
		mountOpt string
		image    []byte
		wantFail bool
	}{
		{"ext4", []string{"mkfs.ext4", "-q", "-F"}, 16 << 20, "", fixture.Build(11, fixture.Region{Kind: fixture.Random, Len: 24 << 20}), true},
		{"ext4", []string{"mkfs.ext4", "-q", "-F"}, 16 << 20, "", fixture.Build(12,
			fixture.Region{Kind: fixture.Random, Len: 1 << 20},
			fixture.Region{Kind: fixture.Zero, Len: 40 << 20},
			fixture.Region{Kind: fixture.Text, Len: 1 << 20}), false},
		{"btrfs", []string{"mkfs.btrfs", "-q", "-f"}, 128 << 20, "compress=zstd", fixture.Build(13, fixture.Region{Kind: fixture.Text, Len: 96 << 20}), false},
	} {
		t.Run(fmt.Sprintf("%s-%dMiB-fail=%v", c.fs, len(c.image)>>20, c.wantFail), func(t *testing.T) {
			if _, err := exec.LookPath(c.mkfs[0]); err != nil {
				fixture.SkipOrFail(t, "%s not available (.ci/run installs it): %v", c.mkfs[0], err)
			}
			dev, _ := fixture.LoopDevice(t, c.size, []byte{0})
			if out, err := exec.Command(c.mkfs[0], append(c.mkfs[1:], dev)...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", c.mkfs[0], err, out)
			}
			mnt := t.TempDir()
			args := []string{dev, mnt}
			if c.mountOpt != "" {
				args = append([]string{"-o", c.mountOpt}, args...)
			}
			if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
				fixture.SkipOrFail(t, "mount %s (%s) failed (needs root): %v: %s", dev, c.fs, err, out)
			}
			t.Cleanup(func() {
				if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
					t.Errorf("umount: %v: %s", err, out)
				}
			})
			before, _ := os.ReadDir(mnt)
			store := fixture.NewStore(t)
			backupImage(t, store, c.image, "--chunk-size", "1024")
			target := filepath.Join(mnt, "image.raw")
			if c.wantFail {
				// Every chunk gone from the store: a restore that fetched
				// one before finding out there is no room would fail on
				// that chunk instead.
				removeChunks(t, store)
				mustFail(t, 3, []string{target, "not enough free space", "nothing was written"}, "restore", "--store", store, snap0, "drive-scsi0", target)
				if left, _ := os.ReadDir(mnt); len(left) != len(before) {
					t.Errorf("left behind in the file system: %v", left)
				}
				// --force onto an existing file: refused before any write,
				// the old file keeps its bytes, size and allocation.
				old := fixture.Build(14, fixture.Region{Kind: fixture.Random, Len: 1 << 20}, fixture.Region{Kind: fixture.Zero, Len: 1 << 20})
				fixture.WriteFile(t, mnt, "old.raw", old)
				oldPath := filepath.Join(mnt, "old.raw")
				if out, err := exec.Command("fallocate", "-p", "-o", "1048576", "-l", "1048576", oldPath).CombinedOutput(); err != nil {
					t.Fatalf("fallocate: %v: %s", err, out)
				}
				stBefore := statT(t, oldPath)
				mustFail(t, 3, []string{oldPath, "not enough free space", "nothing was written"}, "restore", "--force", "--store", store, snap0, "drive-scsi0", oldPath)
				stAfter := statT(t, oldPath)
				if stAfter.Size != stBefore.Size || stAfter.Blocks != stBefore.Blocks {
					t.Errorf("refused --force changed the old file: size %d -> %d, blocks %d -> %d", stBefore.Size, stAfter.Size, stBefore.Blocks, stAfter.Blocks)
				}
				fixture.Equal(t, oldPath, old)
				return
			}
			restoreJSON(t, "--store", store, snap0, "drive-scsi0", target)
			fixture.Equal(t, target, c.image)
		})
	}
}

// removeChunks deletes every chunk file of the datastore at store (the
// .chunks directories stay).
func removeChunks(t *testing.T, store string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(store, ".chunks"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
			err = os.Remove(p)
		}
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("removing the chunks of %s: %d removed, %v", store, n, err)
	}
}

// statT returns the stat of p (size, allocated blocks).
func statT(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t)
}

// TestBlobArchive restores .blob archives (plain and encrypted).
func TestBlobArchive(t *testing.T) {
	key, _ := fixture.Key(t, 4)
	keyfile := fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")
	conf := []byte("boot: order=scsi0\ncores: 4\nmemory: 8192\nname: db1\nscsi0: local-lvm:vm-100-disk-0,size=32G\n")
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprint("encrypted=", enc), func(t *testing.T) {
			store := fixture.NewStore(t)
			dir := t.TempDir()
			cf := fixture.WriteFile(t, dir, "100.conf", conf)
			img := fixture.WriteFile(t, dir, "disk.raw", fixture.Mixed(200<<10, 3))
			args := []string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64"}
			var kf []string
			if enc {
				kf = []string{"--keyfile", keyfile}
			}
			mustOK(t, append(append(args, kf...), "qemu-server.conf:"+cf, "drive-scsi0.img:"+img)...)
			target := filepath.Join(dir, "restored.conf")
			mustOK(t, append(append([]string{"restore", "--store", store}, kf...), snap0, "qemu-server.conf.blob", target)...)
			fixture.Equal(t, target, conf)
			mustFail(t, 2, []string{target}, append(append([]string{"restore", "--store", store}, kf...), snap0, "qemu-server.conf.blob", target)...)
			mustOK(t, append(append([]string{"restore", "--force", "--store", store}, kf...), snap0, "qemu-server.conf.blob", target)...)
			fixture.Equal(t, target, conf)
			mustOK(t, append(append([]string{"verify", "--store", store}, kf...), snap0)...)
			if enc {
				t2 := filepath.Join(dir, "nokey.conf")
				mustFail(t, 3, []string{"missing key"}, "restore", "--store", store, snap0, "qemu-server.conf.blob", t2) // no damage
				noFile(t, t2)
			}
		})
	}
}
