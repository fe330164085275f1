package keys

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// maxSecretRead bounds what is read for a passphrase from a file or a file
// descriptor (bytes): a passphrase is one short line.
const maxSecretRead = 64 << 10

// EnvPassphrase returns the key passphrase the environment gives, as
// proxmox-backup-client reads it, in this order: PBS_ENCRYPTION_PASSWORD,
// the first line read from the file descriptor PBS_ENCRYPTION_PASSWORD_FD,
// the first line of the file PBS_ENCRYPTION_PASSWORD_FILE. ok is false when
// none is set (the caller asks on the terminal next, then tries
// CredentialPassphrase).
func EnvPassphrase() (pass []byte, ok bool, err error) {
	if p, ok := os.LookupEnv("PBS_ENCRYPTION_PASSWORD"); ok {
		return []byte(p), true, nil
	}
	if fd := os.Getenv("PBS_ENCRYPTION_PASSWORD_FD"); fd != "" {
		pass, err := SecretFromFD("PBS_ENCRYPTION_PASSWORD_FD", fd)
		return pass, true, err
	}
	if f := os.Getenv("PBS_ENCRYPTION_PASSWORD_FILE"); f != "" {
		pass, err := SecretFromFile("PBS_ENCRYPTION_PASSWORD_FILE", f)
		return pass, true, err
	}
	return nil, false, nil
}

// CredentialPassphrase returns the first line of the systemd credential
// $CREDENTIALS_DIRECTORY/proxmox-backup-client.encryption-password; ok is
// false when there is none.
func CredentialPassphrase() (pass []byte, ok bool, err error) {
	dir := os.Getenv("CREDENTIALS_DIRECTORY")
	if dir == "" {
		return nil, false, nil
	}
	cred := filepath.Join(dir, "proxmox-backup-client.encryption-password")
	if _, serr := os.Stat(cred); serr != nil {
		return nil, false, nil
	}
	pass, err = SecretFromFile("systemd credential", cred)
	return pass, true, err
}

// SecretFromFile returns the first line of the file at path (without the
// line end), read as crypto.ReadSecretFile reads it; what names the source
// in errors (an environment variable or a flag), never the content. A file
// that is not there is ErrUsage (as one that is not a regular file is
// crypto.ErrNotSecretFile); an I/O error reading it is neither.
func SecretFromFile(what, path string) ([]byte, error) {
	data, err := crypto.ReadSecretFile(path)
	if err != nil {
		return nil, notThereUsage(fmt.Errorf("%s: %w", what, err))
	}
	return firstLine(what, bytes.NewReader(data))
}

// SecretFromFD returns the first line read from the open file descriptor fd
// (a decimal number, as PBS_ENCRYPTION_PASSWORD_FD gives it); a value that
// is no number is ErrUsage.
func SecretFromFD(what, fd string) ([]byte, error) {
	n, err := strconv.ParseUint(fd, 10, 31)
	if err != nil {
		return nil, usagef("%s: %q is not a file descriptor number", what, fd)
	}
	f := os.NewFile(uintptr(n), what)
	if f == nil {
		return nil, fmt.Errorf("%s: file descriptor %d is not open", what, n)
	}
	defer f.Close()
	return firstLine(what, f)
}

// firstLine reads at most maxSecretRead bytes from r and returns the first
// line without "\n" or "\r\n".
func firstLine(what string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSecretRead))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// Open reads the key file or paper key at path (see Load) and opens it,
// asking ask for the passphrase only when the file is protected; the key
// derivation stops when ctx ends. Errors after the file was read name it;
// a wrong passphrase is ErrNotOpened (NotOpened).
func Open(ctx context.Context, path string, ask func() ([]byte, error)) (*crypto.Config, error) {
	kf, err := Load(path)
	if err != nil {
		return nil, err
	}
	var pass []byte
	if kf.NeedsPassphrase() {
		if pass, err = ask(); err != nil {
			return nil, fmt.Errorf("key file %s: %w", path, err)
		}
	}
	_, cfg, err := kf.Open(ctx, pass)
	if err != nil {
		return nil, NotOpened("key file "+path, err)
	}
	return cfg, nil
}
