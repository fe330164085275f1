package keys

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// realKeys is the directory of the key files written by the official
// client (testdata/keys at the repository root).
const realKeys = "../testdata/keys"

// TestFingerprintClaim: the fingerprint a real PBS key file carries is read
// without its passphrase; a key file without the field has none; a file
// that is no key file is ErrUsage.
func TestFingerprintClaim(t *testing.T) {
	for _, c := range []struct{ file, fp string }{
		{"official-scrypt.key", "be:6c:3e:ae:84:21:9c:ef:a0:89:aa:b2:71:b5:96:7b:91:97:f6:71:6f:1b:ac:b5:ae:e9:cc:d0:d6:2a:b7:97"},
		{"official-pbkdf2.key", "70:44:ba:5f:a7:22:e3:a1:d1:3e:32:d7:3f:58:d6:95:83:44:c3:7d:d6:1c:02:b7:7b:5a:c9:41:8f:9e:c1:ca"},
	} {
		fp, ok, err := Fingerprint(filepath.Join(realKeys, c.file))
		if err != nil || !ok || fp.String() != c.fp {
			t.Errorf("%s: %s (carried %v), %v; want %s", c.file, fp, ok, err, c.fp)
		}
	}
	dir := t.TempDir()
	bare := filepath.Join(dir, "bare.json")
	var key [crypto.KeySize]byte
	data, kf, err := Seal(key, crypto.KDFNone, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), `"fingerprint":"`+kf.Fingerprint+`"`, `"x":""`, 1))
	os.WriteFile(bare, data, 0o600)
	if _, ok, err := Fingerprint(bare); ok || err != nil {
		t.Errorf("key file without fingerprint: carried %v, %v", ok, err)
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("not a key"), 0o600)
	if _, _, err := Fingerprint(junk); !errors.Is(err, ErrUsage) {
		t.Errorf("not a key file: %v, want ErrUsage", err)
	}
}

// TestDirFiles: a directory of keys gives its regular key files in name
// order; other files, links and subdirectories are skipped and said; a
// directory without key files is ErrUsage.
func TestDirFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"official-scrypt.key", "official-pbkdf2.key"} {
		raw, err := os.ReadFile(filepath.Join(realKeys, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), raw, 0o600)
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("keys of the clusters"), 0o600)
	os.Mkdir(filepath.Join(dir, "old"), 0o700)
	outside := filepath.Join(t.TempDir(), "outside.key")
	raw, _ := os.ReadFile(filepath.Join(realKeys, "official-scrypt.key"))
	os.WriteFile(outside, raw, 0o600)
	if err := os.Symlink(outside, filepath.Join(dir, "link.key")); err != nil {
		t.Fatal(err)
	}
	files, skipped, err := DirFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "official-pbkdf2.key"), filepath.Join(dir, "official-scrypt.key")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("files %q, want %q", files, want)
	}
	all := strings.Join(skipped, "\n")
	for _, w := range []string{"README: not a key file", "link.key: not a regular file", "old: not a regular file"} {
		if !strings.Contains(all, w) {
			t.Errorf("skipped %q lacks %q", all, w)
		}
	}
	if _, _, err := DirFiles(t.TempDir()); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "holds no key file") {
		t.Errorf("empty directory: %v, want ErrUsage", err)
	}
	if _, _, err := DirFiles(filepath.Join(dir, "none")); !errors.Is(err, ErrUsage) {
		t.Errorf("no directory: %v, want ErrUsage", err)
	}
}
