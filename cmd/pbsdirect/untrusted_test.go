package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestSignatureOracle: whoever can write a store and read pbsdirect's output
// must not learn a valid signature for a manifest they forged. A sign-only
// manifest pointing its archive at other content, with its old signature,
// is refused by restore, verify (text and JSON) and drill, and no output
// holds the HMAC pbsdirect recomputed; pasting that HMAC in would make the
// forgery pass (the test proves so).
func TestSignatureOracle(t *testing.T) {
	dir := t.TempDir()
	key, cc := fixture.Key(t, 2)
	keyfile := fixture.KeyFile(t, dir, "key.json", key, crypto.KDFNone, "")
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(256<<10, 7), "--chunk-size", "64", "--crypt-mode", "sign-only", "--keyfile", keyfile)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)

	// The attacker's manifest: same signature, another crypt mode (any
	// change of the signed part will do).
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) { m.Files[0].CryptMode = index.CryptNone })
	forged := fixture.Manifest(t, store, snap)
	sig, err := forged.ComputeSignature(cc)
	if err != nil {
		t.Fatal(err)
	}
	secret := hex.EncodeToString(sig[:])
	target := filepath.Join(t.TempDir(), "out.raw")
	for _, args := range [][]string{
		{"restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target},
		{"restore", "--output-format", "json", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target},
		{"verify", "--store", store, "--keyfile", keyfile, snap0},
		{"verify", "--output-format", "json", "--store", store, "--keyfile", keyfile},
		{"drill", "--output-format", "json", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target},
	} {
		r := pbs(t, args...)
		if r.code != 1 || !strings.Contains(r.out+r.err, "signature") {
			t.Errorf("forged manifest not refused for its signature: %v", r)
		}
		// Any 8 consecutive hex digits of the HMAC would already help.
		for i := 0; i+8 <= len(secret); i += 4 {
			if strings.Contains(r.out+r.err, secret[i:i+8]) {
				t.Fatalf("output holds the recomputed signature %s: %v", secret, r)
			}
		}
		noFile(t, target)
	}

	// The oracle would have worked: with the recomputed value pasted in,
	// the forged manifest is accepted.
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) { m.Signature = &secret })
	if err := fixture.Manifest(t, store, snap).Check(cc); err != nil {
		t.Fatalf("pasted signature not accepted (test broken): %v", err)
	}
}

// TestKeyMaterialBounds: key files and passphrase files are regular files of
// a few KiB, and KDF parameters stay within bounds: each hostile one is
// refused at once (no out-of-memory crash, no hang on a FIFO, no hour of
// PBKDF2), exit 1, naming the file.
func TestKeyMaterialBounds(t *testing.T) {
	dir := t.TempDir()
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(128<<10, 3), "--chunk-size", "64")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := fixture.Key(t, 4)
	pbk := fixture.KeyFile(t, dir, "pbkdf2.json", key, crypto.KDFPBKDF2, "hunter22")
	slow := filepath.Join(dir, "slow.json")
	raw, _ := os.ReadFile(pbk)
	var kf map[string]any
	if err := json.Unmarshal(raw, &kf); err != nil {
		t.Fatal(err)
	}
	kf["kdf"].(map[string]any)["PBKDF2"].(map[string]any)["iter"] = 1 << 31
	raw, _ = json.Marshal(kf)
	os.WriteFile(slow, raw, 0o600)
	passFile := filepath.Join(dir, "pass")
	os.WriteFile(passFile, []byte("hunter22\n"), 0o600)
	target := filepath.Join(t.TempDir(), "out.raw")
	for _, c := range []struct {
		name, keyfile, passFile, want string
	}{
		{"keyfile /dev/zero", "/dev/zero", "", "/dev/zero: not a key or passphrase file"},
		{"keyfile FIFO", fifo, "", fifo + ": not a key or passphrase file"},
		{"keyfile directory without key files", t.TempDir(), "", "holds no key file"},
		{"passphrase file /dev/zero", pbk, "/dev/zero", "PBS_ENCRYPTION_PASSWORD_FILE: /dev/zero: not a key or passphrase file"},
		{"passphrase file FIFO", pbk, fifo, "not a key or passphrase file"},
		{"PBKDF2 2^31 iterations", slow, passFile, "pbkdf2 iterations 2147483648"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PBS_ENCRYPTION_PASSWORD", "")
			os.Unsetenv("PBS_ENCRYPTION_PASSWORD")
			t.Setenv("PBS_ENCRYPTION_PASSWORD_FILE", c.passFile)
			for _, args := range [][]string{
				{"restore", "--store", store, "--keyfile", c.keyfile, snap0, "drive-scsi0", target},
				{"verify", "--store", store, "--keyfile", c.keyfile},
				{"key", "show", "--verify", c.keyfile},
			} {
				r := pbsWithin(t, 5*time.Second, args...)
				want := c.want
				if args[0] == "key" && strings.HasPrefix(c.name, "keyfile directory") {
					want = "not a regular file" // key show takes one file
				}
				// A key or passphrase file that cannot be one is a
				// command-line mistake.
				if r.code != 2 || !strings.Contains(r.err, want) {
					t.Errorf("want exit 2 and %q: %v", want, r)
				}
				noFile(t, target)
			}
		})
	}
	// The bounds let real key files through.
	t.Setenv("PBS_ENCRYPTION_PASSWORD_FILE", passFile)
	mustOK(t, "key", "show", "--verify", pbk)
}

// TestChunkSizeOne: a fixed index may not declare a chunk size PBS never
// uses. Chunk size 1 with a 64 MiB "image" (a 2 GiB sparse index, 4 KiB on
// disk) used to drive verify to gigabytes of memory and of output; it is
// refused at once, naming the field.
func TestChunkSizeOne(t *testing.T) {
	b := newBase(t, false).clone(t)
	raw, err := os.ReadFile(b.fidx())
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(raw[0x40:], 64<<20)
	binary.LittleEndian.PutUint64(raw[0x48:], 1)
	writeFile(t, b.fidx(), raw[:index.HeaderSize])
	if err := os.Truncate(b.fidx(), index.HeaderSize+32*(64<<20)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", "--store", b.store, snap0},
		{"verify", "--output-format", "json", "--store", b.store, snap0},
		{"restore", "--store", b.store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "out")},
	} {
		// The output's size, not the time taken, tells a refusal at once
		// from a run through the 64 Mi entries; the deadline is generous,
		// for a hang only.
		r := pbsWithin(t, time.Minute, args...)
		if r.code != 1 || !strings.Contains(r.out+r.err, "chunk size 1 is outside") {
			t.Errorf("want exit 1 naming the chunk size: %v", r)
		}
		if n := len(r.out) + len(r.err); n > 4096 {
			t.Errorf("%s: printed %d bytes", args[0], n)
		}
	}
}

// TestStoreSymlinks: links PBS never makes inside a datastore are not
// followed: a snapshot file linked to a file outside is refused without
// echoing its bytes, and backup never writes through a linked group or
// chunk prefix directory. Links a user makes to move the whole datastore,
// or its .chunks directory, to another disk keep working.
func TestStoreSymlinks(t *testing.T) {
	b := newBase(t, false)
	outside := t.TempDir()
	foreign := filepath.Join(outside, "foreign")
	os.WriteFile(foreign, []byte("FOREIGN!-secret-bytes-of-another-file"), 0o600)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", b.data)
	backupArgs := func(store, btime string) []string {
		return []string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", btime, "--chunk-size", "64", "drive-scsi0.img:" + img}
	}

	for _, name := range []string{"index.json.blob", "drive-scsi0.img.fidx"} {
		c := b.clone(t)
		p := fixture.SnapPath(c.store, c.snap, name)
		os.Remove(p)
		os.Symlink(foreign, p)
		for _, args := range [][]string{
			{"verify", "--store", c.store, snap0},
			{"verify", "--output-format", "json", "--store", c.store, snap0},
			{"restore", "--store", c.store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "out")},
		} {
			r := pbsWithin(t, 20*time.Second, args...)
			if r.code != 1 || !strings.Contains(r.out+r.err, "symbolic link") {
				t.Errorf("%s linked outside: want exit 1 and a refused link: %v", name, r)
			}
			if strings.Contains(r.out+r.err, "FOREIGN") || strings.Contains(r.out+r.err, hex.EncodeToString([]byte("FOREIGN!"))) {
				t.Errorf("output echoes the linked file's bytes: %v", r)
			}
		}
	}

	// Backup through a linked group directory or chunk prefix directory.
	for _, c := range []struct {
		name string
		link func(store string) string // returns the link made
	}{
		{"group directory", func(store string) string { return filepath.Join(store, "vm", "100") }},
		{"chunk prefix directory", func(store string) string { return filepath.Dir(fixture.ChunkPath(store, b.digests[0])) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := b.clone(t)
			victim := t.TempDir()
			p := c.link(s.store)
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			os.Symlink(victim, p)
			r := pbsWithin(t, 20*time.Second, backupArgs(s.store, "2026-11-30T10:00:00Z")...)
			if r.code != 1 || !strings.Contains(r.err, "symbolic link") {
				t.Errorf("backup through a linked %s: want exit 1, refused link: %v", c.name, r)
			}
			if ents, _ := os.ReadDir(victim); len(ents) != 0 {
				t.Errorf("backup wrote outside the datastore: %v", ents)
			}
		})
	}

	// A datastore reached through a link, with its .chunks directory moved
	// to another disk and linked back: backup, verify and restore work.
	s := b.clone(t)
	moved := filepath.Join(t.TempDir(), "chunks")
	if err := os.Rename(filepath.Join(s.store, ".chunks"), moved); err != nil {
		t.Fatal(err)
	}
	os.Symlink(moved, filepath.Join(s.store, ".chunks"))
	link := filepath.Join(t.TempDir(), "datastore")
	os.Symlink(s.store, link)
	mustOK(t, backupArgs(link, "2026-11-30T10:00:00Z")...)
	mustOK(t, "verify", "--store", link)
	target := filepath.Join(t.TempDir(), "out.raw")
	mustOK(t, "restore", "--store", link, "vm/100", "drive-scsi0", target)
	fixture.Equal(t, target, b.data)
}

// TestRequireSignature: --require-signature refuses an unsigned manifest,
// and a signed one it cannot check for want of the key, in restore, verify
// and drill; with a key but without the flag, an unsigned manifest gets a
// warning on stderr (PBS accepts it silently) and a signed one none.
func TestRequireSignature(t *testing.T) {
	dir := t.TempDir()
	key, _ := fixture.Key(t, 5)
	keyfile := fixture.KeyFile(t, dir, "key.json", key, crypto.KDFNone, "")
	data := fixture.Mixed(192<<10, 9)
	unsigned, signed := fixture.NewStore(t), fixture.NewStore(t)
	backupImage(t, unsigned, data, "--chunk-size", "64")
	backupImage(t, signed, data, "--chunk-size", "64", "--crypt-mode", "sign-only", "--keyfile", keyfile)
	target := filepath.Join(t.TempDir(), "out.raw")
	cmds := func(store string, extra ...string) [][]string {
		return [][]string{
			append([]string{"restore", "--store", store, snap0, "drive-scsi0", target}, extra...),
			append([]string{"restore", "--store", store, snap0, "drive-scsi0", "-"}, extra...),
			append([]string{"verify", "--store", store, snap0}, extra...),
			append([]string{"verify", "--output-format", "json", "--store", store}, extra...),
			append([]string{"drill", "--remove", "--store", store, snap0, "drive-scsi0", target}, extra...),
		}
	}
	const warning = "is not signed"
	for _, c := range []struct {
		name   string
		store  string
		extra  []string
		code   int
		output string // in stdout or stderr
	}{
		{"unsigned, required, key", unsigned, []string{"--require-signature", "--keyfile", keyfile}, 1, "has no signature (--require-signature)"},
		{"unsigned, required, no key", unsigned, []string{"--require-signature"}, 1, "has no signature"},
		{"signed, required, no key", signed, []string{"--require-signature"}, 3, "--keyfile"}, // key missing: no damage
		{"unsigned, key given", unsigned, []string{"--keyfile", keyfile}, 0, warning},
		{"signed, required, key", signed, []string{"--require-signature", "--keyfile", keyfile}, 0, ""},
		{"unsigned, no key", unsigned, nil, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range cmds(c.store, c.extra...) {
				r := pbs(t, args...)
				if r.code != c.code || !strings.Contains(r.out+r.err, c.output) {
					t.Errorf("want exit %d and %q: %v", c.code, c.output, r)
				}
				if c.output != warning && strings.Contains(r.err, warning) {
					t.Errorf("unexpected warning: %v", r)
				}
				if c.output == warning && strings.Contains(r.out, warning) {
					t.Errorf("warning on stdout, not stderr: %v", r)
				}
				if c.code != 0 {
					noFile(t, target)
				}
				os.Remove(target)
			}
		})
	}
}

// TestOversizedChunkMemory: chunk files and objects far larger than the
// index allows (128 MiB sparse files for 64 KiB chunks) are refused by their
// size, unread, so that verify and restore with 32 fetchers stay within the
// pipeline's bound: peak RSS no more than a healthy run's plus a few MiB
// (it was 4.5 GiB locally, 2.2 GiB from a bucket).
func TestOversizedChunkMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and versitygw")
	}
	store := fixture.NewStore(t)
	data := fixture.Mixed(4<<20, 31) // 64 chunks of 64 KiB
	backupImage(t, store, data, "--chunk-size", "64")
	root := t.TempDir()
	bucketStore := fixture.CopyDir(t, store, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	bktSetEnv(t, "127.0.0.1:1")

	// The healthy runs first: their peak is the baseline.
	places := []struct {
		name, dir string
		args      []string
	}{
		{"local", store, []string{"--store", store}},
		{"bucket", bucketStore, []string{"--store", "s3://bkt/ds", "--s3-endpoint", s3.Endpoint}},
	}
	base := map[string]int64{}
	for _, p := range places {
		r, rss := pbsProcess(t, append([]string{"verify", "--fetchers", "32"}, append(p.args, snap0)...)...)
		if r.code != 0 {
			t.Fatalf("healthy %s verify: %v", p.name, r)
		}
		base[p.name] = rss
	}
	hdr, digests := fixture.Digests(t, fixture.SnapPath(store, fixture.Snap(t, "", "vm", "100", fixture.T0), "drive-scsi0.img.fidx"))
	zero := fixture.ZeroDigest(int(hdr.ChunkSize), nil)
	n := 0
	for _, p := range places {
		for _, d := range digests {
			if d != zero {
				if err := os.Truncate(fixture.ChunkPath(p.dir, d), 128<<20); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	if n < 2*60 {
		t.Fatalf("only %d data chunks made oversized", n)
	}
	for _, p := range places {
		for _, cmd := range [][]string{
			append(append([]string{"verify", "--fetchers", "32"}, p.args...), snap0),
			append(append([]string{"restore", "--fetchers", "32"}, p.args...), snap0, "drive-scsi0", filepath.Join(t.TempDir(), "out")),
		} {
			r, rss := pbsProcess(t, cmd...)
			if r.code != 1 || !strings.Contains(r.out+r.err, "blob larger than allowed") || !strings.Contains(r.out+r.err, "134217728 bytes") {
				t.Errorf("%s %s: want exit 1, chunk refused by its size: %v", p.name, cmd[0], r)
			}
			t.Logf("%s %s: peak RSS %d MiB (healthy verify %d MiB)", p.name, cmd[0], rss>>20, base[p.name]>>20)
			if rss > base[p.name]+32<<20 {
				t.Errorf("%s %s: peak RSS %d MiB, healthy verify %d MiB", p.name, cmd[0], rss>>20, base[p.name]>>20)
			}
		}
	}
}

// TestKeyDerivationInterrupt: Ctrl-C (SIGINT) stops a key derivation at
// once; it used to be ignored until the KDF finished.
func TestKeyDerivationInterrupt(t *testing.T) {
	dir := t.TempDir()
	key, _ := fixture.Key(t, 6)
	pbk := fixture.KeyFile(t, dir, "pbkdf2.json", key, crypto.KDFPBKDF2, "hunter22")
	raw, _ := os.ReadFile(pbk)
	var kf map[string]any
	if err := json.Unmarshal(raw, &kf); err != nil {
		t.Fatal(err)
	}
	kf["kdf"].(map[string]any)["PBKDF2"].(map[string]any)["iter"] = crypto.PBKDF2MaxIter
	raw, _ = json.Marshal(kf)
	slow := filepath.Join(dir, "slow.json")
	os.WriteFile(slow, raw, 0o600)

	cmd := exec.Command(os.Args[0], "key", "show", "--verify", slow)
	cmd.Env = append(os.Environ(), runAsCLI+"=1", "PBS_ENCRYPTION_PASSWORD=hunter22")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		t.Skip("the derivation finished before the signal: machine too fast to tell")
	case <-time.After(300 * time.Millisecond):
	}
	sent := time.Now()
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
		if d := time.Since(sent); d > 3*time.Second { // at once; generous for a busy machine
			t.Errorf("exited %v after SIGINT", d)
		}
		if cmd.ProcessState.ExitCode() == 0 {
			t.Errorf("interrupted key show exited 0")
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still deriving 10 s after SIGINT")
	}
}

// TestPlanningInterrupt: Ctrl-C (SIGINT) stops the planning of a large
// index at once (a 1 GiB index, here a sparse one, used to take seconds to
// react).
func TestPlanningInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a 1 GiB index in a child process")
	}
	b := newBase(t, false).clone(t)
	const n = 1 << 25 // entries: a 1 GiB index
	raw, err := os.ReadFile(b.fidx())
	if err != nil {
		t.Fatal(err)
	}
	size := uint64(n) * index.MinChunkSize
	binary.LittleEndian.PutUint64(raw[0x40:], size)
	binary.LittleEndian.PutUint64(raw[0x48:], index.MinChunkSize)
	writeFile(t, b.fidx(), raw[:index.HeaderSize])
	if err := os.Truncate(b.fidx(), index.HeaderSize+32*n); err != nil {
		t.Fatal(err)
	}
	fixture.RewriteManifest(t, b.store, b.snap, func(m *index.Manifest) {
		for i := range m.Files {
			if m.Files[i].Filename == "drive-scsi0.img.fidx" {
				m.Files[i].Size = size
			}
		}
	})
	cmd := exec.Command(os.Args[0], "verify", "--store", b.store, snap0)
	cmd.Env = append(os.Environ(), runAsCLI+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		t.Skip("planning finished before the signal: machine too fast to tell")
	case <-time.After(700 * time.Millisecond):
	}
	sent := time.Now()
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
		if d := time.Since(sent); d > 3*time.Second { // at once; generous for a busy machine
			t.Errorf("exited %v after SIGINT", d)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still planning 20 s after SIGINT")
	}
}
