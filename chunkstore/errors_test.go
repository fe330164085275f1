package chunkstore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// TestProven: damage is proven, never assumed. Only an error that wraps a
// failed check of bytes read (ErrDamaged: CRC, decrypt, decompress,
// digest, size bounds) or a definite "not there" (ErrNotFound) proves the
// chunk bad, and not when a cause outside the data is wrapped too; every
// other error (unknown, EIO, EISDIR, refused credentials) proves nothing.
func TestProven(t *testing.T) {
	for _, c := range []struct {
		name             string
		err              error
		damaged, missing bool
	}{
		{"nil", nil, false, false},
		{"crc", fmt.Errorf("chunk x: %w: stored 1, computed 2", chunkstore.ErrCRC), true, false},
		{"digest", fmt.Errorf("%w: content hashes to a", chunkstore.ErrDigestMismatch), true, false},
		{"decrypt", chunkstore.ErrDecrypt, true, false},
		{"decompress", chunkstore.ErrDecompress, true, false},
		{"too large", chunkstore.ErrTooLarge, true, false},
		{"empty", chunkstore.ErrEmpty, true, false},
		{"length", chunkstore.ErrLengthMismatch, true, false},
		{"crypt mode", chunkstore.ErrCryptModeMismatch, true, false},
		{"symlink", chunkstore.ErrSymlink, true, false},
		{"not found", fmt.Errorf("%w (NoSuchKey)", chunkstore.ErrNotFound), false, true},
		{"ENOENT", &fs.PathError{Op: "open", Path: "/c", Err: syscall.ENOENT}, false, false}, // unmapped: the store maps it to ErrNotFound
		{"missing kind", fmt.Errorf("%w: vm/100", chunkstore.MissingKind("no such snapshot")), false, true},
		{"unknown", errors.New("api error ExpiredToken: The provided token has expired"), false, false},
		{"EIO", &fs.PathError{Op: "read", Path: "/c", Err: syscall.EIO}, false, false},
		{"EISDIR", &fs.PathError{Op: "read", Path: "/c", Err: syscall.EISDIR}, false, false},
		{"denied", fmt.Errorf("%w: 403", chunkstore.ErrDenied), false, false},
		{"not found here, unavailable there", errors.Join(chunkstore.ErrNotFound, chunkstore.ErrUnavailable), false, false},
		{"damaged here, unavailable there", errors.Join(chunkstore.ErrCRC, chunkstore.ErrUnavailable), false, false},
	} {
		if d, m := chunkstore.Damaged(c.err), chunkstore.Missing(c.err); d != c.damaged || m != c.missing || chunkstore.Proven(c.err) != (c.damaged || c.missing) {
			t.Errorf("%s: Damaged %v, Missing %v; want %v, %v", c.name, d, m, c.damaged, c.missing)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", chunkstore.ErrCRC), chunkstore.ErrCRC) || errors.Is(chunkstore.ErrCRC, chunkstore.ErrDecrypt) {
		t.Error("the damage kinds are not told apart by errors.Is")
	}
	if chunkstore.ErrCRC.Error() != "blob CRC mismatch" {
		t.Errorf("kind text: %q", chunkstore.ErrCRC.Error())
	}
}
