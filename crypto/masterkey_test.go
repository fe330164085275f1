package crypto

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMasterKeyRoundTrip: a key file encrypted under a master key generated
// here decrypts back with the private key and its passphrase, and not with a
// wrong passphrase or another master key.
func TestMasterKeyRoundTrip(t *testing.T) {
	pubPEM, privPEM, err := GenerateMasterKey(MinMasterKeyBits, []byte("master pass"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----\n")) || !bytes.HasPrefix(privPEM, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\n")) {
		t.Fatalf("PEM types:\n%s\n%.40s", pubPEM, privPEM)
	}
	pub, err := ParseMasterPublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := NewConfig(keyA())
	if err != nil {
		t.Fatal(err)
	}
	kf := cfg.UnprotectedKeyFile("2024-01-01T00:00:00+00:00", time.Unix(1700000000, 0))
	ct, err := RSAEncryptKeyFile(pub, kf)
	if err != nil {
		t.Fatal(err)
	}
	if len(ct) != MinMasterKeyBits/8 {
		t.Fatalf("ciphertext %d bytes, want %d", len(ct), MinMasterKeyBits/8)
	}
	if _, err := ParseMasterPrivateKey(privPEM, []byte("wrong pass")); !errors.Is(err, ErrMasterKeyPassphrase) {
		t.Fatalf("wrong master passphrase: %v", err)
	}
	if _, err := ParseMasterPrivateKey(privPEM, nil); !errors.Is(err, ErrPassphraseNeeded) {
		t.Fatalf("no master passphrase: %v", err)
	}
	priv, err := ParseMasterPrivateKey(privPEM, []byte("master pass"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := RSADecryptKeyFile(priv, ct)
	if err != nil {
		t.Fatal(err)
	}
	_, bcfg, err := back.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if bcfg.Fingerprint() != cfg.Fingerprint() || back.Created != "2024-01-01T00:00:00+00:00" {
		t.Fatalf("recovered key %s created %s", bcfg.Fingerprint(), back.Created)
	}
	ct[100] ^= 1
	if _, err := RSADecryptKeyFile(priv, ct); !errors.Is(err, ErrRSAKeyBlob) {
		t.Fatalf("damaged ciphertext: %v", err)
	}
	if _, err := RSADecryptKeyFile(priv, ct[:10]); !errors.Is(err, ErrRSAKeyBlob) {
		t.Fatalf("short ciphertext: %v", err)
	}
}

// TestMasterKeyOpenSSL: master keys written by OpenSSL (PKCS#8 and the
// traditional encrypted PEM) are read, OpenSSL reads the private key written
// here, and OpenSSL decrypts what RSAEncryptKeyFile encrypts.
func TestMasterKeyOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		// CI installs openssl (.ci/run): there a missing one fails the test.
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal("CI is set, not skipping: openssl not installed")
		}
		t.Skip("openssl not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	pkcs8 := filepath.Join(dir, "pkcs8.pem")
	trad := filepath.Join(dir, "trad.pem")
	pub := filepath.Join(dir, "pub.pem")
	sh("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072", "-aes-256-cbc", "-pass", "pass:master pass", "-out", pkcs8)
	sh("rsa", "-in", pkcs8, "-passin", "pass:master pass", "-traditional", "-aes256", "-passout", "pass:master pass", "-out", trad)
	sh("pkey", "-in", pkcs8, "-passin", "pass:master pass", "-pubout", "-out", pub)
	pubPEM, _ := os.ReadFile(pub)
	pk, err := ParseMasterPublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := NewConfig(keyB())
	ct, err := RSAEncryptKeyFile(pk, cfg.UnprotectedKeyFile("", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pkcs8, trad} {
		data, _ := os.ReadFile(f)
		priv, err := ParseMasterPrivateKey(data, []byte("master pass"))
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		kf, err := RSADecryptKeyFile(priv, ct)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if kf.Fingerprint != cfg.Fingerprint().String() {
			t.Fatalf("%s: fingerprint %s", filepath.Base(f), kf.Fingerprint)
		}
	}
	// OpenSSL decrypts our ciphertext with its key, and reads our private key.
	ctFile := filepath.Join(dir, "ct")
	os.WriteFile(ctFile, ct, 0o600)
	out := filepath.Join(dir, "plain")
	sh("pkeyutl", "-decrypt", "-inkey", pkcs8, "-passin", "pass:master pass", "-pkeyopt", "rsa_padding_mode:pkcs1", "-in", ctFile, "-out", out)
	js, _ := os.ReadFile(out)
	if kf, err := ParseKeyFile(js); err != nil || kf.Fingerprint != cfg.Fingerprint().String() {
		t.Fatalf("OpenSSL-decrypted key file %s: %v", js, err)
	}
	_, ours, err := GenerateMasterKey(MinMasterKeyBits, []byte("master pass"))
	if err != nil {
		t.Fatal(err)
	}
	oursFile := filepath.Join(dir, "ours.pem")
	os.WriteFile(oursFile, ours, 0o600)
	sh("pkey", "-in", oursFile, "-passin", "pass:master pass", "-noout")
}
