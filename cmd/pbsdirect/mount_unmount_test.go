package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestMountUnmountRaced stops a mount whose fusermount3 -u unmounts and is
// then killed by a signal, as the second signal of a pair sent to the
// process and then to its group (timeout -s INT, Ctrl-C) kills it: the
// directory is no longer mounted, so mount ends as asked (exit 0, no
// "unmount …: invalid argument" error).
func TestMountUnmountRaced(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	real, err := exec.LookPath("fusermount3")
	if err != nil {
		fixture.SkipOrFail(t, "no fusermount3: %v", err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = -u ]; then " + real + " \"$@\"; kill -INT $$; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "fusermount3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	store := fixture.NewStore(t)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	src := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Build(1, fixture.Region{Kind: fixture.Random, Len: 1 << 20}))
	fixture.Backup(t, store, snap, backup.Options{ChunkSize: 1 << 20}, backup.Source{Name: "drive-scsi0.img", Path: src})
	mnt := t.TempDir()
	r := start(t, "mount", "--store", store, snap.String(), mnt)
	r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "mounted") })
	if _, err := os.Stat(filepath.Join(mnt, "drive-scsi0.img")); err != nil {
		t.Fatalf("drive-scsi0.img: %v", err)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("mount exited %d after its unmount was raced:\n%s\n%s", code, r.out, r.err)
	}
	if strings.Contains(r.err.String(), "invalid argument") {
		t.Errorf("stderr: %s", r.err)
	}
	if out, err := exec.Command("mountpoint", "-q", mnt).CombinedOutput(); err == nil {
		exec.Command(real, "-u", "-z", mnt).Run()
		t.Errorf("%s is still mounted: %s", mnt, out)
	}
}
