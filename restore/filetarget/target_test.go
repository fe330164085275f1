package filetarget_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestOpenTarget covers new, existing (with and without Force) and
// non-regular targets, zeroing, alignment fallbacks and abort cleanup.
func TestOpenTarget(t *testing.T) {
	const size = 3<<20 + 512
	page := func(b byte) []byte { return bytes.Repeat([]byte{b}, 1<<20) }

	t.Run("new-sparse-and-abort", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "new.raw")
		tg, err := filetarget.Open(p, size, filetarget.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.Zero(0, 2<<20); err != nil {
			t.Fatal(err)
		}
		if err := tg.WriteAt(page(7), 2<<20); err != nil {
			t.Fatal(err)
		}
		if err := tg.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a new target must not appear under its name before Close: %v", err)
		}
		if err := tg.Close(false); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil || st.Size() != size {
			t.Fatalf("size %v %v", st, err)
		}
		if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 1<<20+64<<10 {
			t.Errorf("new target is not sparse: %d bytes allocated", blocks)
		}

		// Aborted: nothing is left, neither the name nor the temporary file.
		p2 := filepath.Join(dir, "aborted.raw")
		tg, err = filetarget.Open(p2, size, filetarget.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.WriteAt(page(9), 0); err != nil {
			t.Fatal(err)
		}
		if err := tg.Close(true); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("aborted new target left files: %v", ents)
		}
	})

	t.Run("exists-without-force", func(t *testing.T) {
		old := page(0x33)
		p := fixture.WriteFile(t, t.TempDir(), "old.raw", old)
		if _, err := filetarget.Open(p, size, filetarget.Options{}); !errors.Is(err, restore.ErrTargetExists) {
			t.Fatalf("got %v, want ErrTargetExists", err)
		}
		fixture.Equal(t, p, old)
	})

	for _, noDirect := range []bool{false, true} {
		name := map[bool]string{false: "force", true: "force-no-direct"}[noDirect]
		t.Run(name, func(t *testing.T) {
			p := fixture.WriteFile(t, t.TempDir(), "old.raw", bytes.Repeat([]byte{0xab}, 5<<20))
			tg, err := filetarget.Open(p, size, filetarget.Options{Force: true, NoDirect: noDirect})
			if err != nil {
				t.Fatal(err)
			}
			if noDirect && tg.Direct() {
				t.Error("NoDirect target uses O_DIRECT")
			}
			want := make([]byte, size)
			buf := alignedPage(9)
			copy(want[0:], buf)
			if err := tg.WriteAt(buf, 0); err != nil {
				t.Fatal(err)
			}
			if err := tg.Zero(1<<20, 2<<20); err != nil {
				t.Fatal(err)
			}
			tail := bytes.Repeat([]byte{5}, 512) // short, unaligned last piece
			copy(want[3<<20:], tail)
			if err := tg.WriteAt(tail, 3<<20); err != nil {
				t.Fatal(err)
			}
			if err := tg.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := tg.Close(true); err != nil { // abort keeps a file it did not create
				t.Fatal(err)
			}
			fixture.Equal(t, p, want)
		})
	}

	t.Run("directory", func(t *testing.T) {
		if _, err := filetarget.Open(t.TempDir(), size, filetarget.Options{Force: true}); err == nil {
			t.Fatal("directory accepted as target")
		}
	})
	t.Run("char-device", func(t *testing.T) {
		if _, err := filetarget.Open("/dev/null", size, filetarget.Options{Force: true}); err == nil {
			t.Fatal("character device accepted as target")
		}
	})
}

// alignedPage returns 1 MiB of b in a 4096-aligned buffer.
func alignedPage(b byte) []byte {
	raw := make([]byte, 1<<20+restore.Alignment)
	off := 0
	for uintptrOf(raw[off:])%restore.Alignment != 0 {
		off++
	}
	p := raw[off : off+1<<20]
	for i := range p {
		p[i] = b
	}
	return p
}
