package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/keys"
)

// TestMasterPaperKeyImport: the paper key of a master private key (key
// paperkey: numbered lines and QR codes, more than a key file may have for
// the 4096-bit keys PBS makes) is accepted by key import-with-master-key
// as the master key, whole or as its numbered lines typed back; a line
// missing is named, junk larger than a key file is refused.
func TestMasterPaperKeyImport(t *testing.T) {
	fixture.SkipIfShort(t)
	dir := t.TempDir()
	t.Chdir(dir)
	mpass := fixture.WriteFile(t, dir, "mpass.txt", []byte("master passphrase\n"))
	mustOK(t, "key", "create-master-key", "--bits", "4096", "--master-passphrase-file", mpass)
	key, cc := fixture.Key(t, 21)
	keyfile := fixture.KeyFile(t, dir, "key.json", key, crypto.KDFNone, "")
	ct, err := keys.RSAEncryptUnder(masterPublicName, keyfile, cc)
	if err != nil {
		t.Fatal(err)
	}
	ctFile := fixture.WriteFile(t, dir, "rsa-encrypted.key", ct)
	fp := cc.Fingerprint().String()[:23]

	paper := mustOK(t, "key", "paperkey", "--subject", "host1", masterPrivateName).out
	if len(paper) <= crypto.MaxSecretFileSize {
		t.Errorf("paper key of a 4096-bit master key: %d bytes, want more than a key file may have (%d)", len(paper), crypto.MaxSecretFileSize)
	}
	var typed []string
	for l := range strings.SplitSeq(paper, "\n") {
		if m := regexp.MustCompile(`^\s*[0-9]+: `).FindString(l); m != "" {
			typed = append(typed, strings.TrimLeft(l, " "))
		}
	}
	if len(typed) < 10 {
		t.Fatalf("paper key has %d numbered lines:\n%s", len(typed), paper)
	}
	for _, tc := range []struct{ name, text string }{
		{"printout", paper},
		{"typed", strings.Join(typed, "\n") + "\n"},
		{"typed with CRLF", strings.Join(typed, "\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master := fixture.WriteFile(t, t.TempDir(), "master.txt", []byte(tc.text))
			out := filepath.Join(t.TempDir(), "recovered.json")
			r := mustOK(t, "key", "import-with-master-key", "--kdf", "none", "--master-passphrase-file", mpass, ctFile, master, out)
			if !strings.Contains(r.out, fp) {
				t.Errorf("imported key should have fingerprint %s: %v", fp, r)
			}
			if _, err := os.Stat(out); err != nil {
				t.Error(err)
			}
		})
	}
	missing := append(append([]string{}, typed[:3]...), typed[4:]...)
	r := pbs(t, "key", "import-with-master-key", "--kdf", "none", "--master-passphrase-file", mpass, ctFile,
		fixture.WriteFile(t, dir, "missing.txt", []byte(strings.Join(missing, "\n"))), filepath.Join(dir, "m.json"))
	// A printout that does not parse is a usage error, as a key file (exit 2).
	if r.code != exitUsage || !strings.Contains(r.err, "line 3 of 0..") {
		t.Errorf("a line missing: %v", r)
	}
	r = pbs(t, "key", "import-with-master-key", "--kdf", "none", "--master-passphrase-file", mpass, ctFile,
		fixture.WriteFile(t, dir, "junk.txt", []byte(strings.Repeat("junk\n", 20000))), filepath.Join(dir, "j.json"))
	if r.code != exitUsage || !strings.Contains(r.err, "more than the 65536") {
		t.Errorf("junk larger than a key file: %v", r)
	}
}
