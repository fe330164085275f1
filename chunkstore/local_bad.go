package chunkstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/crypto"
)

var _ BadCopies = (*Local)(nil)

// ListBadCopies returns the names of the copies of d kept aside (see
// BadCopies): each BadName(d, n), n below MaxBadGenerations, that is a
// non-empty regular file in the chunk's prefix directory, looked up by
// name (at most MaxBadGenerations lookups, no directory listing). A
// symbolic link is neither followed nor listed; a prefix directory that
// is one is refused (ErrSymlink).
func (l *Local) ListBadCopies(ctx context.Context, d crypto.Digest) ([]string, error) {
	h := d.String()
	dir, err := openBeneath(l.chunks, l.chunks.Name(), h[:4], unix.O_RDONLY|unix.O_DIRECTORY)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("chunk %s: .bad copies: %w", d, err)
	}
	defer dir.Close()
	var names []string
	for n := range MaxBadGenerations {
		name := BadName(d, n)
		var st unix.Stat_t
		err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			return nil, fmt.Errorf("chunk %s: %w", d, &LocatedError{Location: filepath.Join(dir.Name(), name), Err: mapErr(err)})
		case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0:
			names = append(names, name)
		}
	}
	return names, nil
}

// ReadBadCopy reads the copy name kept aside (see BadCopies), as
// ReadChunk reads a chunk file: bounded by limit, no symbolic link
// followed.
func (l *Local) ReadBadCopy(ctx context.Context, name string, buf []byte, limit int) ([]byte, error) {
	d, ok := ParseBadName(name)
	if !ok {
		return nil, NotBadName(name)
	}
	if err := l.limit.WaitRequest(ctx); err != nil {
		return nil, err
	}
	h := d.String()
	buf, err := l.readChunkFile(ctx, h[:4]+"/"+name, buf, limit)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, err
		}
		return nil, fmt.Errorf("chunk %s: %w", d, err)
	}
	return buf, nil
}

// BadCopyLocation returns the path of the copy name kept aside, in its
// chunk's prefix directory.
func (l *Local) BadCopyLocation(name string) string {
	if len(name) < 4 {
		return filepath.Join(l.chunks.Name(), name)
	}
	return filepath.Join(l.chunks.Name(), name[:4], name)
}
