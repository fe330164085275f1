package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
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
		{"keyfile directory", dir, "", "not a regular file"},
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
				if r.code != 1 || !strings.Contains(r.err, c.want) {
					t.Errorf("want exit 1 and %q: %v", c.want, r)
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
		start := time.Now()
		r := pbsWithin(t, 10*time.Second, args...)
		if r.code != 1 || !strings.Contains(r.out+r.err, "chunk size 1 is outside") {
			t.Errorf("want exit 1 naming the chunk size: %v", r)
		}
		if d := time.Since(start); d > 2*time.Second || len(r.out)+len(r.err) > 4096 {
			t.Errorf("%s: took %v and printed %d bytes", args[0], d, len(r.out)+len(r.err))
		}
	}
}
