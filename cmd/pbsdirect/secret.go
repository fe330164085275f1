package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// maxSecretRead bounds what is read for a passphrase from a file or a file
// descriptor (bytes): a passphrase is one short line.
const maxSecretRead = 64 << 10

// secretFromFile returns the first line of the file at path (without the
// line end); what names the source in errors (an environment variable or a
// flag), never the content.
func secretFromFile(what, path string) ([]byte, error) {
	data, err := crypto.ReadSecretFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return firstLine(what, bytes.NewReader(data))
}

// secretFromFD returns the first line read from the open file descriptor fd
// (a decimal number, as PBS_ENCRYPTION_PASSWORD_FD gives it).
func secretFromFD(what, fd string) ([]byte, error) {
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
