package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// dirFiles returns every file in dir (hidden ones too) and its bytes.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// TestRestoreGuestRefusedResumeKeepsWork: an interrupted guest restore's
// partial outputs and journals are left byte for byte as they were by a
// --resume refused for whatever reason (the configuration's path taken,
// a disk mapped onto or the configuration written over one of the run's
// own partial outputs or journals) before any chunk is fetched; the
// resume given a free configuration path then continues them, fetching
// fewer chunks than all.
func TestRestoreGuestRefusedResumeKeepsWork(t *testing.T) {
	fixture.SkipIfShort(t)
	imgs := guestDiskImages()
	storeArgs, p, digests := guestBucket(t, 700*time.Millisecond)
	chunkGETs := func() int { return p.Matched()[len(digests)] }
	out := t.TempDir()
	slow := []string{"--jobs", "1", "--writers", "0", "--fetchers", "1"}
	interruptGuest(t, append(append(append([]string{"restore-guest"}, storeArgs...), slow...), "vm/100", out), chunkGETs)
	kept := dirFiles(t, out)
	partial := filepath.Join(out, ".drive-scsi0.img.pbsdirect-partial")
	journal := filepath.Join(out, ".drive-scsi0.img.pbsdirect-journal")
	for _, f := range []string{partial, journal} {
		if _, ok := kept[filepath.Base(f)]; !ok {
			t.Fatalf("the interrupted run left no %s: %v", f, kept)
		}
	}
	conf := filepath.Join(out, "qemu-server.conf")

	for _, c := range []struct {
		name  string
		extra []string
		file  bool // a file of the user's at the configuration's path
		want  []string
	}{
		{"configuration exists", nil, true, []string{"qemu-server.conf", "exists"}},
		{"disk onto a partial output", []string{"--map", "drive-scsi1=" + partial, "--force"}, false, []string{"partial output", "drive-scsi0.img"}},
		{"disk onto a journal", []string{"--map", "drive-scsi1=" + journal, "--force"}, false, []string{"journal", "drive-scsi0.img"}},
		{"configuration onto a journal", []string{"--config", journal}, false, []string{"journal", "drive-scsi0.img"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.file {
				fixture.WriteFile(t, out, "qemu-server.conf", []byte("precious"))
				defer os.Remove(conf)
			}
			before := chunkGETs()
			args := append(append(append(append([]string{"restore-guest", "--resume"}, storeArgs...), slow...), c.extra...), "vm/100", out)
			mustFail(t, 2, c.want, args...)
			if n := chunkGETs() - before; n != 0 {
				t.Errorf("%d chunks fetched before the refusal", n)
			}
			now := dirFiles(t, out)
			if c.file {
				if !bytes.Equal(now["qemu-server.conf"], []byte("precious")) {
					t.Errorf("the user's configuration file changed: %q", now["qemu-server.conf"])
				}
				delete(now, "qemu-server.conf")
			}
			for name, b := range kept {
				if !bytes.Equal(now[name], b) {
					t.Errorf("the refused --resume changed %s (%d bytes, was %d; there: %t)", name, len(now[name]), len(b), now[name] != nil)
				}
			}
			for name := range now {
				if _, ok := kept[name]; !ok {
					t.Errorf("the refused --resume left %s", name)
				}
			}
		})
	}

	before := chunkGETs()
	r := mustOK(t, append(append([]string{"restore-guest", "--resume"}, storeArgs...), "vm/100", out)...)
	if again := chunkGETs() - before; again == 0 || again >= 6 {
		t.Errorf("resume after the refusals: %d chunks fetched (of 6): %v", again, r)
	}
	for i := range imgs {
		fixture.Equal(t, filepath.Join(out, guestDiskNames[i]+".img"), imgs[i])
	}
	fixture.Equal(t, conf, []byte(guestConf))
}
