package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/keys"
)

// unsetPassphraseEnv removes PBS_ENCRYPTION_PASSWORD and
// PBS_ENCRYPTION_PASSWORD_FILE for the test (restored afterwards).
func unsetPassphraseEnv(t *testing.T) {
	for _, k := range []string{"PBS_ENCRYPTION_PASSWORD", "PBS_ENCRYPTION_PASSWORD_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// TestPassphraseFile: PBS_ENCRYPTION_PASSWORD_FILE gives the passphrase (its
// first line, without the line end) to key create, key show --verify and
// restore; a file with another passphrase fails as a wrong passphrase.
func TestPassphraseFile(t *testing.T) {
	unsetPassphraseEnv(t)
	dir := t.TempDir()
	t.Setenv("PBS_ENCRYPTION_PASSWORD_FILE", fixture.WriteFile(t, dir, "pass", []byte("correct horse\r\nsecond line, ignored\n")))
	keyfile := filepath.Join(dir, "key.json")
	mustOK(t, "key", "create", "--kdf", "pbkdf2", keyfile)
	r := mustOK(t, "key", "show", "--verify", "--output-format", "json", keyfile)
	var info keys.Info
	if err := json.Unmarshal([]byte(r.out), &info); err != nil || !info.Verified {
		t.Fatalf("key show --verify: %+v %v", info, err)
	}
	// The same passphrase given directly opens the key: the file's first
	// line is the passphrase.
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "correct horse")
	mustOK(t, "key", "show", "--verify", keyfile)
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD")

	data := fixture.Mixed(300<<10, 41)
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "64", "--keyfile", keyfile)
	target := filepath.Join(t.TempDir(), "out.raw")
	mustOK(t, "restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, data)

	t.Setenv("PBS_ENCRYPTION_PASSWORD_FILE", fixture.WriteFile(t, dir, "wrong", []byte("wrong horse\n")))
	target2 := filepath.Join(t.TempDir(), "out2.raw")
	// A wrong passphrase is no damage (exit 3, not 1): retry with the right one.
	mustFail(t, 3, []string{keyfile, "wrong passphrase", "retry with the right passphrase"}, "restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target2)
	noFile(t, target2)
}

// TestNoTerminalForPassphrase: with no passphrase in the environment and no
// terminal (the real process in a new session, without a controlling
// terminal), key create with a KDF fails naming the ways to give one and
// creates nothing, and a restore with a protected key fails without
// touching the target; both are usage mistakes (exit 2).
func TestNoTerminalForPassphrase(t *testing.T) {
	unsetPassphraseEnv(t)
	dir := t.TempDir()
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "correct horse")
	keyfile := filepath.Join(dir, "key.json")
	mustOK(t, "key", "create", "--kdf", "pbkdf2", keyfile)
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(200<<10, 42), "--chunk-size", "64", "--keyfile", keyfile)
	unsetPassphraseEnv(t)

	detached := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), runAsCLI+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	newKey := filepath.Join(dir, "new.json")
	code, stderr := detached("key", "create", "--kdf", "scrypt", newKey)
	if code != 2 || !strings.Contains(stderr, "there is no terminal to ask on") || !strings.Contains(stderr, "PBS_ENCRYPTION_PASSWORD_FILE") {
		t.Errorf("key create without a terminal: exit %d, stderr %q", code, stderr)
	}
	noFile(t, newKey)

	target := filepath.Join(t.TempDir(), "out.raw")
	code, stderr = detached("restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", target)
	if code != 2 || !strings.Contains(stderr, keyfile) || !strings.Contains(stderr, "passphrase-protected") {
		t.Errorf("restore with a protected key without a terminal: exit %d, stderr %q", code, stderr)
	}
	noFile(t, target)
}

// TestKeyCreateNoOverwrite: key create never replaces an existing key file
// (nor what a symbolic link at the path names) and says so.
func TestKeyCreateNoOverwrite(t *testing.T) {
	dir := t.TempDir()
	keyfile := filepath.Join(dir, "key.json")
	mustOK(t, "key", "create", "--kdf", "none", keyfile)
	before, err := os.ReadFile(keyfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, kdf := range []string{"none", "pbkdf2"} {
		t.Setenv("PBS_ENCRYPTION_PASSWORD", "x")
		r := pbs(t, "key", "create", "--kdf", kdf, keyfile)
		if r.code == 0 || !strings.Contains(r.err, keyfile) || !strings.Contains(r.err, "refusing to overwrite") {
			t.Errorf("--kdf %s over an existing key file: %v", kdf, r)
		}
	}
	fixture.Equal(t, keyfile, before)
	// A dangling link: the file it names is not created either.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join(dir, "elsewhere.json"), link); err != nil {
		t.Fatal(err)
	}
	if r := pbs(t, "key", "create", "--kdf", "none", link); r.code == 0 {
		t.Errorf("key create through a dangling link: %v", r)
	}
	noFile(t, filepath.Join(dir, "elsewhere.json"))
}

// TestKeyFileUsageExit: a key file or passphrase file that is not there,
// or a key file that does not parse, is a usage error (exit 2) for every
// command that reads one: PBS_ENCRYPTION_PASSWORD_FILE for restore, verify
// and key show --verify, key change-passphrase --new-passphrase-file, key
// show and restore --keyfile of a file that is no key.
func TestKeyFileUsageExit(t *testing.T) {
	unsetPassphraseEnv(t)
	dir := t.TempDir()
	keyfile := filepath.Join(dir, "key.json")
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "correct horse")
	mustOK(t, "key", "create", "--kdf", "pbkdf2", keyfile)
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(100<<10, 42), "--chunk-size", "64", "--keyfile", keyfile)
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD")
	missing := filepath.Join(dir, "nonexist")
	notKey := fixture.WriteFile(t, dir, "notes.txt", []byte("just some text\n"))
	badJSON := fixture.WriteFile(t, dir, "bad.json", []byte(`{"kdf": null, "data": "AAAA"}`))
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"restore, passphrase file missing", map[string]string{"PBS_ENCRYPTION_PASSWORD_FILE": missing},
			[]string{"restore", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", filepath.Join(dir, "out.raw")}, "PBS_ENCRYPTION_PASSWORD_FILE"},
		{"verify, passphrase file missing", map[string]string{"PBS_ENCRYPTION_PASSWORD_FILE": missing},
			[]string{"verify", "--store", store, "--keyfile", keyfile}, "PBS_ENCRYPTION_PASSWORD_FILE"},
		{"key show --verify, passphrase file missing", map[string]string{"PBS_ENCRYPTION_PASSWORD_FILE": missing},
			[]string{"key", "show", "--verify", keyfile}, "PBS_ENCRYPTION_PASSWORD_FILE"},
		{"key show --verify, passphrase file under a file", map[string]string{"PBS_ENCRYPTION_PASSWORD_FILE": filepath.Join(notKey, "x")},
			[]string{"key", "show", "--verify", keyfile}, "PBS_ENCRYPTION_PASSWORD_FILE"},
		{"change-passphrase, new passphrase file missing", map[string]string{"PBS_ENCRYPTION_PASSWORD": "correct horse"},
			[]string{"key", "change-passphrase", "--kdf", "pbkdf2", "--new-passphrase-file", missing, keyfile}, "--new-passphrase-file"},
		{"key show, key file missing", nil, []string{"key", "show", missing}, missing},
		{"key show, text file", nil, []string{"key", "show", notKey}, notKey},
		{"key show, JSON that is no key", nil, []string{"key", "show", badJSON}, badJSON},
		{"restore, keyfile that is no key", nil,
			[]string{"restore", "--store", store, "--keyfile", notKey, snap0, "drive-scsi0", filepath.Join(dir, "out2.raw")}, notKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			mustFail(t, 2, []string{c.want}, c.args...)
		})
	}
}
