package main

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

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
