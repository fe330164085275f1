package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// readOnlyDir returns a new directory no file can be created in: a
// read-only bind mount as root (permissions do not stop root), else a
// directory of mode 0555.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
		return ro
	}
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("no bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("no read-only remount: %v", err)
	}
	return ro
}

// TestRestoreGuestConfigDirReadOnly: a configuration that could not be
// written (its directory read-only) refuses the guest restore with exit 3
// before any chunk is fetched or any disk target created, naming the
// configuration's path once.
func TestRestoreGuestConfigDirReadOnly(t *testing.T) {
	fixture.SkipIfShort(t)
	storeArgs, p, digests := guestBucket(t, 0)
	out := t.TempDir()
	conf := filepath.Join(readOnlyDir(t), "qemu-server.conf")
	r := mustFail(t, 3, []string{conf, "cannot create a file in"}, append(append([]string{"restore-guest"}, storeArgs...), "--config", conf, "vm/100", out)...)
	if n := p.Matched()[len(digests)]; n != 0 {
		t.Errorf("%d chunks fetched before the refusal", n)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("the refused run left %d entries in DIR", len(ents))
	}
	if strings.Count(r.err, conf) != 1 {
		t.Errorf("the configuration's path said %d times: %s", strings.Count(r.err, conf), r.err)
	}
}

// TestRestoreGuestConfigNotWrittenSaid: when a disk's restore fails or is
// damaged, the configuration is not written, and both reports say so and
// why: the text's "configuration not written: …", JSON's config with
// written false and the reason.
func TestRestoreGuestConfigNotWrittenSaid(t *testing.T) {
	fixture.SkipIfShort(t)
	store := guestStore(t)
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-virtio0.img.fidx"))
	p := fixture.ChunkPath(store, ds[len(ds)-1])
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0xff
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		onCorrupt, reason string
	}{
		{"fail", "disk restore failed (rerun with --resume)"},
		{"zero", "a disk was restored with damage"},
	} {
		t.Run(c.onCorrupt, func(t *testing.T) {
			out := t.TempDir()
			args := []string{"restore-guest", "--store", store, "--on-corrupt", c.onCorrupt, "vm/100", out}
			r := pbs(t, args...)
			if r.code != 1 || !strings.Contains(r.out, "configuration not written: "+c.reason) {
				t.Errorf("text report: exit %d, want 1 and %q: %v", r.code, c.reason, r)
			}
			out = t.TempDir()
			r = pbs(t, append(append([]string{}, args[:len(args)-1]...), "--output-format", "json", out)...)
			var rep guestJSON
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
				t.Fatalf("JSON: %v\n%s", err, r.out)
			}
			if rep.Config.Path != filepath.Join(out, "qemu-server.conf") || rep.Config.Written || !strings.Contains(rep.Config.Reason, c.reason) {
				t.Errorf("JSON config: %+v, want not written: %s", rep.Config, c.reason)
			}
			if _, err := os.Stat(filepath.Join(out, "qemu-server.conf")); err == nil {
				t.Errorf("the configuration was written")
			}
		})
	}
}
