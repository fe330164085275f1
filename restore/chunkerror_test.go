package restore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/restore"
)

// TestChunkErrorCause: the cause names the chunk's file or object once:
// not again when the store's error names it (by its type), and added when
// it does not, even where the error's text merely contains it (a server's
// message).
func TestChunkErrorCause(t *testing.T) {
	var d crypto.Digest
	d[0] = 0xab
	loc := "s3://b/.chunks/ab00/" + d.String()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"store names it", fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: loc, Err: chunkstore.ErrNotFound}),
			loc + ": not found"},
		{"path error names it", fmt.Errorf("chunk %s: %w", d, &fs.PathError{Op: "open", Path: loc, Err: fs.ErrNotExist}),
			"open " + loc + ": file does not exist"},
		{"a check failed", chunkstore.ErrCRC, loc + ": " + chunkstore.ErrCRC.Error()},
		{"text that contains it", errors.New("server says: no " + loc), loc + ": server says: no " + loc},
		{"another copy", fmt.Errorf("chunk %s: %w", d, &chunkstore.LocatedError{Location: loc + "x", Err: chunkstore.ErrEmpty}),
			loc + ": " + loc + "x: " + chunkstore.ErrEmpty.Error()},
	} {
		ce := &restore.ChunkError{Digest: d, Length: 4096, Offsets: []uint64{0}, Location: loc, Err: c.err}
		if got := ce.Cause(); got != c.want {
			t.Errorf("%s: Cause = %q, want %q", c.name, got, c.want)
		}
	}
}
