package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/paperkey"
)

// officialPass is the passphrase of the key files in testdata/keys.
const officialPass = "throwaway-passphrase-for-test"

// TestPaperKeyRestores: the paper key (text form) of the key file written by
// proxmox-backup-client restores a snapshot made with that key file, as
// --keyfile, QR code included, and carries PBS's markers, indented JSON and
// the QR code of the JSON lines (package paperkey scans it back).
func TestPaperKeyRestores(t *testing.T) {
	t.Setenv("PBS_ENCRYPTION_PASSWORD", officialPass)
	keyfile := filepath.Join("..", "..", "testdata", "keys", "official-pbkdf2.key")
	store := fixture.NewStore(t)
	data := zeroMiddle(31)
	backupImage(t, store, data, "--keyfile", keyfile)

	r := mustOK(t, "key", "paperkey", "--subject", "pve1 backup key", keyfile)
	for _, want := range []string{"Subject: pve1 backup key\n\n" + crypto.PaperKeyBegin + "\n{\n  \"kdf\": {\n    \"PBKDF2\": {", "\n" + crypto.PaperKeyEnd + "\n"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("paper key lacks %q:\n%s", want, r.out)
		}
	}
	// After the end marker: the QR code of the key lines (utf8i text, as
	// qrencode prints it for PBS) and an empty line; the restore and key
	// show below read the file with it.
	_, rest, _ := strings.Cut(r.out, crypto.PaperKeyBegin+"\n")
	js, tail, _ := strings.Cut(rest, "\n"+crypto.PaperKeyEnd+"\n")
	qr, err := paperkey.QR(js)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(qr, "█") || tail != qr+"\n" {
		t.Fatalf("paper key ends with %q, want the QR code of the key lines and an empty line:\n%s", tail, qr)
	}
	paper := fixture.WriteFile(t, t.TempDir(), "paperkey.txt", []byte(r.out))
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json")
	if again := mustOK(t, "key", "paperkey", "--subject", "pve1 backup key", keyfile); again.out != r.out {
		t.Errorf("PROXMOX_OUTPUT_FORMAT=json changed the paper key:\n%s", again.out)
	}
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "")
	out := filepath.Join(t.TempDir(), "r.raw")
	mustOK(t, "restore", "--store", store, "--keyfile", paper, snap0, "drive-scsi0", out)
	fixture.Equal(t, out, data)
	mustOK(t, "key", "show", "--verify", paper)

	cut := fixture.WriteFile(t, t.TempDir(), "cut.txt", []byte(strings.Split(r.out, crypto.PaperKeyEnd)[0]))
	// A paper key cut short does not parse: a usage error (exit 2), as any
	// key file that does not parse.
	mustFail(t, 2, []string{"cut.txt", crypto.PaperKeyEnd}, "restore", "--store", store, "--keyfile", cut, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "x"))
	mustFail(t, 2, []string{"must be text"}, "key", "paperkey", "--output-format", "html", keyfile)
}

// TestPaperKeyMaster: key paperkey of a PEM master private key prints its
// numbered lines in blocks of five, each with its QR code and a form feed
// line (package paperkey scans them back).
func TestPaperKeyMaster(t *testing.T) {
	_, priv, err := crypto.GenerateMasterKey(crypto.MinMasterKeyBits, []byte("master pass"))
	if err != nil {
		t.Fatal(err)
	}
	pem := fixture.WriteFile(t, t.TempDir(), masterPrivateName, priv)
	r := mustOK(t, "key", "paperkey", "--subject", "master", pem)
	want, err := paperkey.PrivateText(priv, "master")
	if err != nil {
		t.Fatal(err)
	}
	if r.out != string(want) || !strings.Contains(r.out, " 5: ") || !strings.Contains(r.out, "█") || !strings.HasSuffix(r.out, "\n\n\f\n") {
		t.Fatalf("paper key of the master key:\n%s\nwant:\n%s", r.out, want)
	}
}

// TestChangePassphrase: after key change-passphrase the key file opens with
// the new passphrase only, keeps its key (the old backup restores) and its
// creation time, and takes the new KDF.
func TestChangePassphrase(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.json")
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "old passphrase")
	mustOK(t, "key", "create", "--kdf", "pbkdf2", key)
	before, _ := os.ReadFile(key)
	store := fixture.NewStore(t)
	data := zeroMiddle(32)
	backupImage(t, store, data, "--keyfile", key)

	newPass := fixture.WriteFile(t, dir, "new.txt", []byte("new passphrase\nignored second line\n"))
	mustOK(t, "key", "change-passphrase", "--kdf", "scrypt", "--hint", "the new one", "--new-passphrase-file", newPass, key)
	after, _ := os.ReadFile(key)
	kb, _ := crypto.ParseKeyFile(before)
	ka, err := crypto.ParseKeyFile(after)
	if err != nil || ka.KDF == nil || ka.KDF.Scrypt == nil || ka.Created != kb.Created || ka.Hint != "the new one" || ka.Fingerprint != kb.Fingerprint {
		t.Fatalf("changed key file %s (%v), was %s", after, err, before)
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
	}
	out := filepath.Join(t.TempDir(), "r.raw")
	// A wrong passphrase is no damage (exit 3, not 1): retry with the right one.
	mustFail(t, 3, []string{"wrong passphrase"}, "restore", "--store", store, "--keyfile", key, snap0, "drive-scsi0", out)
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "new passphrase")
	mustOK(t, "restore", "--store", store, "--keyfile", key, snap0, "drive-scsi0", out)
	fixture.Equal(t, out, data)

	// Without a terminal and without --new-passphrase-file: a usage error, the file untouched.
	mustFail(t, 2, []string{"--new-passphrase-file"}, "key", "change-passphrase", key)
	if again, _ := os.ReadFile(key); string(again) != string(after) {
		t.Fatal("a failed change-passphrase changed the key file")
	}
}

// TestPassphraseSources: the passphrase comes from PBS_ENCRYPTION_PASSWORD_FD
// and from the systemd credential, as proxmox-backup-client reads them; a
// missing passphrase names PBS_ENCRYPTION_PASSWORD_FILE.
func TestPassphraseSources(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.json")
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "fd passphrase")
	mustOK(t, "key", "create", "--kdf", "pbkdf2", key)
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD")

	mustFail(t, 2, []string{"PBS_ENCRYPTION_PASSWORD_FILE"}, "key", "show", "--verify", key)

	// Raw descriptors: the command closes the one it reads, as its owner.
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	syscall.Write(p[1], []byte("fd passphrase\n"))
	syscall.Close(p[1])
	t.Setenv("PBS_ENCRYPTION_PASSWORD_FD", strconv.Itoa(p[0]))
	if r := mustOK(t, "key", "show", "--verify", key); !strings.Contains(r.out, "verified:") {
		t.Fatalf("key show --verify with PBS_ENCRYPTION_PASSWORD_FD: %v", r)
	}
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD_FD")

	creds := t.TempDir()
	fixture.WriteFile(t, creds, "proxmox-backup-client.encryption-password", []byte("fd passphrase"))
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	mustOK(t, "key", "show", "--verify", key)
	fixture.WriteFile(t, creds, "proxmox-backup-client.encryption-password", []byte("wrong"))
	// A wrong passphrase is no damage (exit 3, not 1), in key show too.
	mustFail(t, 3, []string{"wrong passphrase", "retry with the right passphrase"}, "key", "show", "--verify", key)
}

// TestMasterKeyRecovery: the whole master-key recovery without PBS. A
// backup made with --master-pubkey-file stores rsa-encrypted.key.blob (a
// plain, uncompressed blob listed as encrypt); with the key file gone, key
// import-with-master-key reads it from the snapshot (no key needed) or from
// the copied blob file, decrypts it with the private master key and writes a
// new key file that restores the snapshot. Once with a master key made by
// pbsdirect, once with one made by OpenSSL.
func TestMasterKeyRecovery(t *testing.T) {
	fixture.SkipIfShort(t)
	openssl, opensslErr := exec.LookPath("openssl")
	for _, maker := range []string{"pbsdirect", "openssl"} {
		t.Run(maker, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			mpass := fixture.WriteFile(t, dir, "mpass.txt", []byte("master passphrase\n"))
			switch maker {
			case "pbsdirect":
				mustOK(t, "key", "create-master-key", "--bits", "3072", "--master-passphrase-file", mpass)
				mustFail(t, 2, []string{"already exists"}, "key", "create-master-key", "--master-passphrase-file", mpass)
			case "openssl":
				if opensslErr != nil {
					fixture.SkipOrFail(t, "openssl not installed (.ci/run installs it)")
				}
				for _, args := range [][]string{
					{"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072", "-aes-256-cbc", "-pass", "pass:master passphrase", "-out", masterPrivateName},
					{"pkey", "-in", masterPrivateName, "-passin", "pass:master passphrase", "-pubout", "-out", masterPublicName},
				} {
					if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
						t.Fatalf("openssl %v: %v\n%s", args, err, out)
					}
				}
			}
			key := filepath.Join(dir, "key.json")
			t.Setenv("PBS_ENCRYPTION_PASSWORD", "key passphrase")
			mustOK(t, "key", "create", "--kdf", "pbkdf2", key)
			store := fixture.NewStore(t)
			data := zeroMiddle(33)
			backupImage(t, store, data, "--keyfile", key, "--master-pubkey-file", masterPublicName)
			m := fixture.Manifest(t, store, fixture.Snap(t, "", "vm", "100", fixture.T0))
			fi, err := m.File(index.RSAKeyBlobName)
			if err != nil || fi.CryptMode != index.CryptEncrypt {
				t.Fatalf("manifest entry of %s: %+v, %v", index.RSAKeyBlobName, fi, err)
			}
			mustOK(t, "verify", "--store", store, "--keyfile", key)
			os.Remove(key)

			// From the store, without any key.
			t.Setenv("PBS_ENCRYPTION_PASSWORD", "recovered passphrase")
			mustFail(t, 2, []string{"--master-passphrase-file"}, "key", "import-with-master-key", "--store", store, snap0, masterPrivateName, filepath.Join(dir, "nope.json"))
			r := mustOK(t, "key", "import-with-master-key", "--store", store, "--master-passphrase-file", mpass, "vm/100", masterPrivateName, filepath.Join(dir, "recovered.json"))
			if !strings.Contains(r.out, string(m.Unprotected["key-fingerprint"][1:12])) {
				t.Errorf("import should name the fingerprint: %v", r)
			}
			out := filepath.Join(dir, "r.raw")
			mustOK(t, "restore", "--store", store, "--keyfile", filepath.Join(dir, "recovered.json"), snap0, "drive-scsi0", out)
			fixture.Equal(t, out, data)

			// From the blob file copied out of the snapshot directory, into an unprotected key.
			blob := filepath.Join(store, "vm", "100", t0str, index.RSAKeyBlobName)
			mustOK(t, "key", "import-with-master-key", "--kdf", "none", "--master-passphrase-file", mpass, blob, masterPrivateName, filepath.Join(dir, "plain.json"))
			os.Remove(out)
			mustOK(t, "restore", "--store", store, "--keyfile", filepath.Join(dir, "plain.json"), snap0, "drive-scsi0", out)
			fixture.Equal(t, out, data)

			// TYPE/ID whose latest snapshot was made without the master
			// key: the newest one that has it is read, and said.
			backupImage(t, store, data, "--backup-time", "2026-11-29T12:00:00Z", "--crypt-mode", "none")
			r = mustOK(t, "key", "import-with-master-key", "--kdf", "none", "--store", store, "--master-passphrase-file", mpass, "vm/100", masterPrivateName, filepath.Join(dir, "older.json"))
			if !strings.Contains(r.err, "reading it from vm/100/"+t0str) {
				t.Errorf("import from a group whose latest snapshot has no key should name the one read: %v", r)
			}
			// The blob definitively not there: exit 1, for a snapshot
			// named exactly and for a group none of whose snapshots has it.
			mustFail(t, 1, []string{"has no " + index.RSAKeyBlobName}, "key", "import-with-master-key", "--kdf", "none", "--store", store, "--master-passphrase-file", mpass, "vm/100/2026-11-29T12:00:00Z", masterPrivateName, filepath.Join(dir, "n1.json"))
			img := fixture.WriteFile(t, dir, "other.raw", data)
			mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "101", "--backup-time", t0str, "--crypt-mode", "none", "drive-scsi0.img:"+img)
			mustFail(t, 1, []string{"no snapshot of vm/101 has " + index.RSAKeyBlobName}, "key", "import-with-master-key", "--kdf", "none", "--store", store, "--master-passphrase-file", mpass, "vm/101", masterPrivateName, filepath.Join(dir, "n2.json"))
			// A snapshot named without --store: say so.
			mustFail(t, 2, []string{"give --store"}, "key", "import-with-master-key", "--master-passphrase-file", mpass, "vm/100", masterPrivateName, filepath.Join(dir, "y.json"))

			// The other files of the recovery where a key file goes: said
			// what they are, usage errors.
			mustFail(t, 2, []string{"is a PEM file", "not a key file"}, "key", "show", masterPrivateName)
			mustFail(t, 2, []string{"is a PBS blob", "not a key file"}, "restore", "--store", store, "--keyfile", blob, snap0, "drive-scsi0", filepath.Join(dir, "z.raw"))

			bad := fixture.WriteFile(t, dir, "bad.txt", []byte("wrong master\n"))
			// A wrong master passphrase is no damage (exit 3, not 1).
			mustFail(t, 3, []string{"wrong master key passphrase", "retry with the right passphrase"}, "key", "import-with-master-key", "--store", store, "--master-passphrase-file", bad, snap0, masterPrivateName, filepath.Join(dir, "x.json"))
		})
	}
}

// TestMasterPubkeyNeedsEncryption: --master-pubkey-file without a key is a
// usage error and writes nothing.
func TestMasterPubkeyNeedsEncryption(t *testing.T) {
	store := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", zeroMiddle(34))
	mustFail(t, 2, []string{"--master-pubkey-file"}, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--master-pubkey-file", "whatever.pem", "drive-scsi0.img:"+img)
}

// TestKeyCreateFullDisk: a key file that cannot be written whole (a full
// file system) is not reported as created: exit 3, and no file is left
// (an empty one would make every later use of the default key fail).
func TestKeyCreateFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		fixture.SkipOrFail(t, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4k"); err != nil {
		fixture.SkipOrFail(t, "mount tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, 0)
	if err := os.WriteFile(filepath.Join(dir, "fill"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "secret1")
	key := filepath.Join(dir, "k.json")
	r := pbs(t, "key", "create", "--kdf", "none", key)
	if r.code != 3 || strings.Contains(r.out, "created key file") {
		t.Errorf("key create on a full file system: %v; want exit 3 and no claim", r)
	}
	if _, err := os.Lstat(key); err == nil {
		t.Errorf("a key file was left behind: %s", key)
	}
}
