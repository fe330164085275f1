package chunkstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// ofdLock tries an open-file-description lock of type typ (unix.F_RDLCK,
// F_WRLCK, F_UNLCK) on the whole file f, as another program (PBS' garbage
// collection) would hold it: OFD locks conflict with the process-associated
// fcntl lock OpenLocal takes even within one process. The error is EAGAIN
// on a conflict. (f stays open: closing any descriptor of the file would
// drop this process's fcntl lock.)
func ofdLock(f *os.File, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

// TestLocalLock: a datastore opened for writing holds a shared lock on
// .lock until Close (§9): a writer of the exclusive lock (garbage
// collection) is kept out meanwhile, another shared holder is not; while
// the exclusive lock is held elsewhere, opening for writing fails naming
// .lock, and opening for reading (restore, verify) still works.
func TestLocalLock(t *testing.T) {
	root := fixture.NewStore(t) // a datastore with its prefix directories left out (fast)
	s, err := chunkstore.OpenLocal(root, true)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := ofdLock(other, unix.F_WRLCK); !errors.Is(err, unix.EAGAIN) {
		t.Errorf("exclusive lock while the datastore is open for writing: %v, want EAGAIN", err)
	}
	if err := ofdLock(other, unix.F_RDLCK); err != nil {
		t.Errorf("a second shared lock must be allowed: %v", err)
	}
	if err := ofdLock(other, unix.F_UNLCK); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ofdLock(other, unix.F_WRLCK); err != nil {
		t.Fatalf("exclusive lock after Close: %v", err)
	}
	if s, err := chunkstore.OpenLocal(root, true); err == nil || !strings.Contains(err.Error(), ".lock") {
		if s != nil {
			s.Close()
		}
		t.Errorf("open for writing while .lock is held exclusively: %v, want an error naming .lock", err)
	}
	r, err := chunkstore.OpenLocal(root, false)
	if err != nil {
		t.Fatalf("open for reading while .lock is held exclusively: %v", err)
	}
	r.Close()
}

// TestLocalChunkFiles: how the local store treats its chunk files (§1.2,
// §9): writing an existing chunk leaves its bytes and mtime and refreshes
// its atime (so that garbage collection keeps it); a 0-byte chunk file is
// no data (ErrEmpty) and is replaced by a write; a chunk PBS renamed to
// "<digest>.0.bad" is missing, never read, and a write stores the chunk
// again beside it.
func TestLocalChunkFiles(t *testing.T) {
	ctx := context.Background()
	s, err := chunkstore.OpenLocal(fixture.NewStore(t), true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunk := func(seed byte) (crypto.Digest, []byte) {
		data := bytes.Repeat([]byte{seed, seed + 1, seed + 2}, 5000)
		return (*crypto.Config)(nil).ChunkDigest(data), fixture.Encode(t, data, nil, true)
	}

	t.Run("atime-refresh", func(t *testing.T) {
		d, blob := chunk(1)
		if existed, err := s.WriteChunk(ctx, d, blob); err != nil || existed {
			t.Fatalf("first write: existed %v, %v", existed, err)
		}
		p := s.ChunkLocation(d)
		old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if existed, err := s.WriteChunk(ctx, d, []byte("other bytes, never written over a chunk")); err != nil || !existed {
			t.Fatalf("second write: existed %v, %v", existed, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		atime, mtime := time.Unix(st.Atim.Unix()), time.Unix(st.Mtim.Unix())
		if atime.Before(start.Add(-time.Second)) {
			t.Errorf("atime %v not refreshed (write at %v)", atime, start)
		}
		if !mtime.Equal(old) {
			t.Errorf("mtime %v changed, want %v", mtime, old)
		}
		got, err := s.ReadChunk(ctx, d, nil, 0)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("chunk bytes changed by the second write (%v)", err)
		}
	})

	t.Run("zero-byte", func(t *testing.T) {
		d, blob := chunk(10)
		p := s.ChunkLocation(d)
		os.MkdirAll(filepath.Dir(p), 0o750)
		if err := os.WriteFile(p, nil, 0o640); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadChunk(ctx, d, nil, 0); !errors.Is(err, chunkstore.ErrEmpty) || !strings.Contains(err.Error(), p) {
			t.Errorf("reading a 0-byte chunk file: %v, want ErrEmpty naming %s", err, p)
		}
		if existed, err := s.WriteChunk(ctx, d, blob); err != nil || existed {
			t.Fatalf("write over a 0-byte chunk file: existed %v, %v", existed, err)
		}
		if got, err := s.ReadChunk(ctx, d, nil, 0); err != nil || !bytes.Equal(got, blob) {
			t.Errorf("after the write: %v", err)
		}
	})

	t.Run("bad", func(t *testing.T) {
		d, blob := chunk(20)
		p := s.ChunkLocation(d)
		bad := p + ".0.bad"
		os.MkdirAll(filepath.Dir(p), 0o750)
		if err := os.WriteFile(bad, blob, 0o640); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadChunk(ctx, d, nil, 0); !errors.Is(err, chunkstore.ErrNotFound) {
			t.Errorf("chunk renamed to .bad: %v, want ErrNotFound", err)
		}
		if existed, err := s.WriteChunk(ctx, d, blob); err != nil || existed {
			t.Fatalf("write beside a .bad file: existed %v, %v", existed, err)
		}
		if got, err := s.ReadChunk(ctx, d, nil, 0); err != nil || !bytes.Equal(got, blob) {
			t.Errorf("after the write: %v", err)
		}
		if _, err := os.Stat(bad); err != nil {
			t.Errorf("the .bad file must stay for PBS: %v", err)
		}
	})
}
