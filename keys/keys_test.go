package keys

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// TestCreateWriteLoad: a created key file loads back with its KDF and
// fingerprint; it is never overwritten (ErrUsage), and Write with replace
// re-seals it in place, mode 0600, the key unchanged.
func TestCreateWriteLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "enc.key")
	kf, err := Create(path, crypto.KDFNone, nil, "a hint")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if info := Describe(path, got); info.KDF != crypto.KDFNone || info.Fingerprint != kf.Fingerprint || info.Hint != "a hint" {
		t.Errorf("Describe = %+v, want kdf none, fingerprint %s", info, kf.Fingerprint)
	}
	if _, err := Create(path, crypto.KDFNone, nil, ""); !errors.Is(err, ErrUsage) {
		t.Errorf("second Create: %v, want ErrUsage", err)
	}
	key, cfg, err := got.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := Seal(key, crypto.KDFPBKDF2, []byte("a long passphrase"), got.Created, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(path, data, true); err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if KDFName(again) != crypto.KDFPBKDF2 || again.Created != got.Created {
		t.Errorf("re-sealed: kdf %s created %s, want pbkdf2, %s", KDFName(again), again.Created, got.Created)
	}
	if _, cfg2, err := again.Open(context.Background(), []byte("a long passphrase")); err != nil || cfg2.Fingerprint() != cfg.Fingerprint() {
		t.Errorf("re-sealed key opens to %v (%v), want fingerprint %v", cfg2, err, cfg.Fingerprint())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", st.Mode(), err)
	}
}

// TestLoadRefused: a file that is not there, a PEM file, a paper key cut
// short and an unknown KDF are usage mistakes.
func TestLoadRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing")); !errors.Is(err, ErrUsage) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	pem := filepath.Join(dir, "master-public.pem")
	if err := os.WriteFile(pem, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(pem); !errors.Is(err, ErrUsage) || NotAKeyFile([]byte("-----BEGIN PUBLIC KEY-----")) == "" {
		t.Errorf("PEM file: %v", err)
	}
	if err := CheckKDF("argon2"); !errors.Is(err, ErrUsage) {
		t.Errorf("CheckKDF(argon2) = %v", err)
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("no key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(text); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), text) {
		t.Errorf("text file: %v", err)
	}
	// A paper key cut short (no END line) does not parse: the file
	// given must change, as for any key file that does not parse.
	cut := filepath.Join(dir, "cut.paperkey")
	if err := os.WriteFile(cut, []byte(crypto.PaperKeyBegin+"\n{\"kdf\": null,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cut); !errors.Is(err, ErrUsage) || !errors.Is(err, crypto.ErrPaperKey) || !strings.Contains(err.Error(), cut) {
		t.Errorf("paper key cut short: %v, want ErrUsage naming %s", err, cut)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), filepath.Join(text, "below")} {
		if _, err := SecretFromFile("PBS_ENCRYPTION_PASSWORD_FILE", p); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "PBS_ENCRYPTION_PASSWORD_FILE") {
			t.Errorf("passphrase file %s: %v", p, err)
		}
	}
	if pass, err := SecretFromFile("x", text); err != nil || string(pass) != "no key" {
		t.Errorf("passphrase file: %q, %v", pass, err)
	}
	// An I/O error reading a file that is there is no usage mistake.
	if err := notThereUsage(fmt.Errorf("%s: %w", text, syscall.EIO)); errors.Is(err, ErrUsage) {
		t.Errorf("EIO taken for a usage error: %v", err)
	}
}

// TestOpen: a protected key file asks for its passphrase (a wrong one
// fails naming the file, ErrNotOpened: no damage, no usage mistake), an
// unprotected one does not ask.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	prot, plain := filepath.Join(dir, "prot.key"), filepath.Join(dir, "plain.key")
	kf, err := Create(prot, crypto.KDFPBKDF2, []byte("secret-pass"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(plain, crypto.KDFNone, nil, ""); err != nil {
		t.Fatal(err)
	}
	asked := 0
	ask := func(p string) func() ([]byte, error) {
		return func() ([]byte, error) { asked++; return []byte(p), nil }
	}
	cc, err := Open(context.Background(), prot, ask("secret-pass"))
	if err != nil || asked != 1 || cc.Fingerprint().String() != kf.Fingerprint {
		t.Errorf("protected: %v, asked %d", err, asked)
	}
	if _, err := Open(context.Background(), prot, ask("wrong")); !errors.Is(err, ErrNotOpened) || errors.Is(err, ErrUsage) ||
		!errors.Is(err, crypto.ErrWrongPassphrase) || !strings.Contains(err.Error(), prot) || !strings.Contains(err.Error(), "retry with the right passphrase") {
		t.Errorf("wrong passphrase: %v, want ErrNotOpened naming %s", err, prot)
	}
	asked = 0
	if _, err := Open(context.Background(), plain, ask("x")); err != nil || asked != 0 {
		t.Errorf("unprotected: %v, asked %d", err, asked)
	}
}

// TestOpenMaster: a protected master private key asks for its passphrase,
// one without does not; a wrong passphrase names the file and is
// ErrNotOpened (exit 3), a file that is no master key ErrUsage (exit 2).
func TestOpenMaster(t *testing.T) {
	dir := t.TempDir()
	_, protPEM, err := crypto.GenerateMasterKey(crypto.MinMasterKeyBits, []byte("master-pass"))
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, crypto.MinMasterKeyBits)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(rk)
	if err != nil {
		t.Fatal(err)
	}
	plainPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	prot, plain := filepath.Join(dir, "prot.pem"), filepath.Join(dir, "plain.pem")
	if err := os.WriteFile(prot, protPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, plainPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	asked := 0
	ask := func(p string) func() ([]byte, error) {
		return func() ([]byte, error) { asked++; return []byte(p), nil }
	}
	if k, err := OpenMaster(prot, ask("master-pass")); err != nil || k == nil || asked != 1 {
		t.Errorf("protected: %v, asked %d", err, asked)
	}
	if _, err := OpenMaster(prot, ask("wrong")); !errors.Is(err, ErrNotOpened) || !strings.Contains(err.Error(), prot) {
		t.Errorf("wrong passphrase: %v, want ErrNotOpened naming %s", err, prot)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMaster(junk, ask("x")); !errors.Is(err, ErrUsage) || !errors.Is(err, crypto.ErrMasterKeyFormat) || !strings.Contains(err.Error(), junk) {
		t.Errorf("no master key: %v, want ErrUsage naming %s", err, junk)
	}
	asked = 0
	if k, err := OpenMaster(plain, ask("x")); err != nil || k == nil || asked != 0 {
		t.Errorf("unprotected: %v, asked %d", err, asked)
	}
}
