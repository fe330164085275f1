package crypto

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadSecretFile: key and passphrase files are regular files of at most
// MaxSecretFileSize bytes; anything else is refused at once, without
// reading (/dev/zero) or blocking (a FIFO with no writer).
func TestReadSecretFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "key.json")
	os.WriteFile(ok, []byte(`{"kdf":null}`), 0o600)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, MaxSecretFileSize+1), 0o600)
	sparse := filepath.Join(dir, "sparse")
	os.WriteFile(sparse, nil, 0o600)
	os.Truncate(sparse, 1<<40)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(ok, link) // a link the user made to their own key file is fine
	for _, c := range []struct {
		path string
		want error // nil: read
	}{
		{ok, nil},
		{link, nil},
		{"/dev/zero", ErrNotSecretFile},
		{fifo, ErrNotSecretFile},
		{dir, ErrNotSecretFile},
		{big, ErrNotSecretFile},
		{sparse, ErrNotSecretFile},
		{filepath.Join(dir, "missing"), os.ErrNotExist},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			// A read that blocks (a FIFO without writer) or reads on
			// (/dev/zero) is caught by a deadline that only a hang misses.
			type res struct {
				data []byte
				err  error
			}
			done := make(chan res, 1)
			go func() { d, err := ReadSecretFile(c.path); done <- res{d, err} }()
			var data []byte
			var err error
			select {
			case r := <-done:
				data, err = r.data, r.err
			case <-time.After(30 * time.Second):
				t.Fatalf("still reading %s after 30s: want a refusal at once", c.path)
			}
			switch {
			case c.want == nil && (err != nil || string(data) != `{"kdf":null}`):
				t.Fatalf("got %q, %v", data, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("error %v, want %v", err, c.want)
			case c.want == ErrNotSecretFile && !strings.Contains(err.Error(), c.path):
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestDeriveKEKCancel: a derivation at the bound stops as soon as its
// context is cancelled (Ctrl-C), not when the KDF finishes.
func TestDeriveKEKCancel(t *testing.T) {
	k := &KeyFile{KDF: &KDF{PBKDF2: &PBKDF2Params{Iter: PBKDF2MaxIter, Salt: []byte("salt")}}}
	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if delay == 0 {
				cancel()
			} else {
				time.AfterFunc(delay, cancel)
			}
			start := time.Now()
			_, _, err := (&KeyFile{KDF: k.KDF, Data: make(b64, IVSize+TagSize+KeySize)}).Open(ctx, []byte("hello"))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			// A derivation at the bound takes seconds of CPU; one that
			// ran to its end before seeing the cancel would take that
			// long. The bound is generous: only that fails it.
			if d := time.Since(start); d > delay+time.Second {
				t.Errorf("returned %v after the cancel", d-delay)
			}
		})
	}
}
