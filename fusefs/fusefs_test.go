package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/fusefs"
)

// badAt fails reads touching [bad, bad+4096), with an error that says it
// was logged already when logged is set.
type badAt struct {
	data   []byte
	bad    int64
	logged bool
}

// loggedErr is a read error its ReaderAt logged.
type loggedErr struct{ error }

func (loggedErr) Logged() bool { return true }

func (b *badAt) ReadAt(p []byte, off int64) (int, error) {
	if off < b.bad+4096 && off+int64(len(p)) > b.bad {
		if b.logged {
			return 0, fmt.Errorf("wrapped: %w", loggedErr{errors.New("damaged, logged")})
		}
		return 0, errors.New("damaged")
	}
	n := copy(p, b.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// mount mounts files at a fresh directory, or skips without FUSE (fails when CI is set).
func mount(t *testing.T, files []fusefs.File, opts fusefs.Options) string {
	t.Helper()
	dir := t.TempDir()
	m, err := fusefs.New(dir, files, opts)
	if err != nil {
		if errors.Is(err, fusefs.ErrUnavailable) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		m.Wait()
	})
	return dir
}

// TestMount: files read back whole and at offsets with their sizes; a
// failing range gives EIO and the rest of the file still reads; writes fail.
func TestMount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	var (
		mu     sync.Mutex
		logged []string
	)
	dir := mount(t, []fusefs.File{
		{Name: "disk.img", Size: int64(len(data)), Data: bytes.NewReader(data), ModTime: time.Unix(1795946400, 0)},
		{Name: "bad.img", Size: int64(len(data)), Data: &badAt{data: data, bad: 2 << 20}},
		{Name: "logged.img", Size: int64(len(data)), Data: &badAt{data: data, bad: 2 << 20, logged: true}},
		{Name: "empty.conf", Size: 0, Data: bytes.NewReader(nil)},
	}, fusefs.Options{FsName: "test", Log: func(s string) {
		mu.Lock()
		logged = append(logged, s)
		mu.Unlock()
	}})

	got, err := os.ReadFile(filepath.Join(dir, "disk.img"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("disk.img: %v, equal %v", err, bytes.Equal(got, data))
	}
	st, err := os.Stat(filepath.Join(dir, "disk.img"))
	if err != nil || st.Size() != int64(len(data)) || st.Mode().Perm() != 0o444 || st.ModTime().Unix() != 1795946400 {
		t.Errorf("stat: %v %v", st, err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 4 {
		t.Errorf("readdir: %v %v", ents, err)
	}
	f, err := os.Open(filepath.Join(dir, "bad.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, 4096)
	if _, err := f.ReadAt(p, 2<<20); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the damaged range: %v, want EIO", err)
	}
	for _, off := range []int64{0, 1 << 20, 3 << 20} {
		if _, err := f.ReadAt(p, off); err != nil && err != io.EOF {
			t.Errorf("read at %d beside the damaged range: %v", off, err)
		}
	}
	mu.Lock()
	if len(logged) == 0 {
		t.Error("failed read not logged")
	}
	logged = nil
	mu.Unlock()
	// A failure the ReaderAt logged itself gives EIO and no second line.
	g, err := os.Open(filepath.Join(dir, "logged.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.ReadAt(p, 2<<20); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the damaged range: %v, want EIO", err)
	}
	mu.Lock()
	if len(logged) != 0 {
		t.Errorf("a failure the ReaderAt logged was logged again: %q", logged)
	}
	mu.Unlock()
	if _, err := os.OpenFile(filepath.Join(dir, "disk.img"), os.O_RDWR, 0); err == nil {
		t.Error("opened for writing")
	}
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); err == nil {
		t.Error("created a file")
	}
}
