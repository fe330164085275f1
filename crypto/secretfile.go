package crypto

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// MaxSecretFileSize is the largest key file or passphrase file read, in
// bytes. A PBS key file is about 400 bytes; the printed paper key of one,
// QR code included, and an RSA master key in PEM stay well below it.
const MaxSecretFileSize = 64 << 10

// ErrNotSecretFile is wrapped by ReadSecretFile for a path that is not a
// regular file of at most MaxSecretFileSize bytes.
var ErrNotSecretFile = errors.New("not a key or passphrase file")

// ReadSecretFile reads a key file or passphrase file. It opens path without
// blocking (O_NONBLOCK: a FIFO without a writer or a device does not hang
// the open), refuses anything but a regular file of at most
// MaxSecretFileSize bytes before reading a byte (/dev/zero, a FIFO, a
// directory), and reads at most that much even if the file grows meanwhile.
// Errors name the path and wrap ErrNotSecretFile or the system error; they
// never hold the file's content.
func ReadSecretFile(path string) ([]byte, error) {
	return ReadSecretFileMax(path, MaxSecretFileSize)
}

// ReadSecretFileMax is ReadSecretFile with limit bytes in place of
// MaxSecretFileSize: for a file that may be larger, such as the printed
// paper key of a master private key.
func ReadSecretFileMax(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file (%s)", path, ErrNotSecretFile, st.Mode().Type())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d a key or passphrase file may have", path, ErrNotSecretFile, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: grew past %d bytes while read", path, ErrNotSecretFile, limit)
	}
	return data, nil
}
