package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestBootRefusedEarly: boot checks that cannot mean anything are refused
// before anything is restored or served: a --boot-pattern matching the
// empty string, --boot-memory or --boot-cores out of range, a
// --boot-output that does not exist (exit 2); drill --boot of a pxar
// archive and boot-check of a snapshot without a disk image (exit 2);
// QEMU missing (exit 3, the package named) before the restore. No
// target is created. It needs no QEMU.
func TestBootRefusedEarly(t *testing.T) {
	store := fixture.NewStore(t)
	work := t.TempDir()
	img := fixture.WriteFile(t, work, "disk.img", make([]byte, 1<<20))
	src := filepath.Join(work, "tree")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	fixture.WriteFile(t, src, "a.txt", []byte("a"))
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "drive-scsi0.img:"+img)
	mustOK(t, "backup", "--store", store, "--backup-type", "host", "--backup-id", "h", "--backup-time", t0str, "root.pxar:"+src)
	out := t.TempDir()
	target := filepath.Join(t.TempDir(), "drill.raw")
	noPath := t.TempDir() // PATH without QEMU
	for _, c := range []struct {
		name   string
		path   string // PATH; "" keeps it
		args   []string
		code   int
		stderr string
	}{
		{"empty pattern", "", []string{"boot-check", "--store", store, "--boot-pattern", "", "vm/100"}, 2, "matches the empty string"},
		{"dot-star pattern", "", []string{"drill", "--boot", "--store", store, "--boot-pattern", ".*", "vm/100", "drive-scsi0", target}, 2, "matches the empty string"},
		{"memory 1", "", []string{"boot-check", "--store", store, "--boot-memory", "1", "vm/100"}, 2, "--boot-memory 1"},
		{"memory 0", "", []string{"boot-check", "--store", store, "--boot-memory", "0", "vm/100"}, 2, "--boot-memory 0"},
		{"cores 0", "", []string{"boot-check", "--store", store, "--boot-cores", "0", "vm/100"}, 2, "--boot-cores 0"},
		{"output missing", "", []string{"boot-check", "--store", store, "--boot-output", filepath.Join(out, "nope"), "vm/100"}, 2, "does not exist"},
		{"drill pxar", "", []string{"drill", "--boot", "--store", store, "host/h", "root.pxar", target}, 2, "root.pxar.didx is not one"},
		{"boot-check pxar only", "", []string{"boot-check", "--store", store, "--boot-output", out, "host/h"}, 2, "no disk image (.img.fidx) to boot in host/h"},
		{"drill no QEMU", noPath, []string{"drill", "--boot", "--store", store, "vm/100", "drive-scsi0", target}, 3, "install qemu-system-x86"},
		{"boot-check no QEMU", noPath, []string{"boot-check", "--store", store, "--boot-output", out, "vm/100"}, 3, "install qemu-system-x86"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.path != "" {
				t.Setenv("PATH", c.path)
			}
			r := pbs(t, c.args...)
			if r.code != c.code || !strings.Contains(r.err, c.stderr) {
				t.Fatalf("want exit %d and %q: %v", c.code, c.stderr, r)
			}
			noFile(t, target)
			if logs, _ := filepath.Glob(filepath.Join(out, "*")); len(logs) != 0 {
				t.Errorf("written: %v", logs)
			}
		})
	}
}
