package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestRestoreGuestConfigInStoreRefused: a --config path inside the
// datastore restored from (directly, or through a symbolic link with
// --follow-symlinks --force), in a directory that is not there, or a
// disk's target, is refused with exit 2 before any disk is written: DIR
// stays empty and the store gains no file.
func TestRestoreGuestConfigInStoreRefused(t *testing.T) {
	fixture.SkipIfShort(t)
	store := guestStore(t)
	for _, c := range []struct {
		name  string
		flags func(t *testing.T, out, link string) []string
		want  []string
	}{
		{"inside the store", func(t *testing.T, _, _ string) []string {
			return []string{"--config", filepath.Join(store, "vm", "100", "qemu.conf")}
		}, []string{"qemu.conf", "datastore"}},
		{"a link into the store", func(t *testing.T, _, link string) []string {
			fixture.WriteFile(t, filepath.Join(store, "vm", "100"), "old.conf", []byte("x"))
			if err := os.Symlink(filepath.Join(store, "vm", "100", "old.conf"), link); err != nil {
				t.Fatal(err)
			}
			return []string{"--force", "--follow-symlinks", "--config", link}
		}, []string{"cfg", "datastore"}},
		{"no such directory", func(t *testing.T, _, _ string) []string {
			return []string{"--config", filepath.Join(t.TempDir(), "none", "x.conf")}
		}, []string{"x.conf", "no such directory"}},
		{"a disk's target", func(t *testing.T, out, _ string) []string {
			return []string{"--config", filepath.Join(out, "drive-scsi0.img")}
		}, []string{"--config", "drive-scsi0.img.fidx"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, side := t.TempDir(), t.TempDir()
			flags := c.flags(t, out, filepath.Join(side, "cfg"))
			mustFail(t, 2, c.want, append(append([]string{"restore-guest", "--store", store}, flags...), "vm/100", out)...)
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("the refused run left %d entries in DIR", len(ents))
			}
			if _, err := os.Stat(filepath.Join(store, "vm", "100", "qemu.conf")); err == nil {
				t.Errorf("the configuration was written into the store")
			}
			os.Remove(filepath.Join(store, "vm", "100", "old.conf"))
		})
	}
}

// TestRestoreGuestTargetAliases: two disks mapped to one target under
// different names (a "./" in the path, hard links of one file, a symbolic
// link to a device) are a usage error (exit 2, "two disks go to"), said
// before any target is opened: the file keeps its content.
func TestRestoreGuestTargetAliases(t *testing.T) {
	fixture.SkipIfShort(t)
	store := guestStore(t)
	keep := []byte("keep me")
	for _, c := range []struct {
		name string
		maps func(t *testing.T, out string) (flags []string, kept string)
	}{
		{"dot in the path", func(t *testing.T, out string) ([]string, string) {
			return []string{"--map", "drive-scsi0=" + filepath.Join(out, "x.img"), "--map", "drive-scsi1=" + out + "/./x.img"}, ""
		}},
		{"a new file through a linked directory", func(t *testing.T, out string) ([]string, string) {
			if err := os.Symlink(out, filepath.Join(out, "self")); err != nil {
				t.Fatal(err)
			}
			return []string{"--map", "drive-scsi0=" + filepath.Join(out, "x.img"), "--map", "drive-scsi1=" + filepath.Join(out, "self", "x.img")}, ""
		}},
		{"hard links", func(t *testing.T, out string) ([]string, string) {
			a := fixture.WriteFile(t, out, "a.img", keep)
			if err := os.Link(a, filepath.Join(out, "b.img")); err != nil {
				t.Fatal(err)
			}
			return []string{"--force", "--map", "drive-scsi0=" + a, "--map", "drive-scsi1=" + filepath.Join(out, "b.img")}, a
		}},
		{"a link to a device", func(t *testing.T, out string) ([]string, string) {
			dev, _ := fixture.LoopDevice(t, 1<<20, nil)
			if err := os.Symlink(dev, filepath.Join(out, "dev")); err != nil {
				t.Fatal(err)
			}
			return []string{"--force", "--map", "drive-scsi0=" + dev, "--map", "drive-scsi1=" + filepath.Join(out, "dev")}, ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			flags, kept := c.maps(t, out)
			before, _ := os.ReadDir(out)
			r := mustFail(t, 2, []string{"two disks go to"}, append(append([]string{"restore-guest", "--store", store, "--no-config"}, flags...), "vm/100", out)...)
			if strings.Contains(r.err, "PID") {
				t.Errorf("refused as busy: %s", r.err)
			}
			if after, _ := os.ReadDir(out); len(after) != len(before) {
				t.Errorf("the refused run left %d entries in DIR, %d before", len(after), len(before))
			}
			if kept != "" {
				fixture.Equal(t, kept, keep)
			}
		})
	}
}

// TestRestoreGuestForceFileKeptWhenDeviceRefused: an existing file
// written over (--force) is left as it was, size and content, when a
// device of the same guest is refused as too small (exit 2).
func TestRestoreGuestForceFileKeptWhenDeviceRefused(t *testing.T) {
	fixture.SkipIfShort(t)
	store := guestStore(t)
	dev, _ := fixture.LoopDevice(t, 256<<10, nil) // drive-scsi0 needs 320 KiB
	out := t.TempDir()
	f := fixture.WriteFile(t, out, "f.img", []byte("keepme\n"))
	mustFail(t, 2, []string{dev}, "restore-guest", "--store", store, "--no-config", "--force",
		"--map", "drive-scsi1="+f, "--map", "drive-scsi0="+dev, "vm/100", out)
	fixture.Equal(t, f, []byte("keepme\n"))
}

// TestRestoreGuestOneDiskDamaged: the chunk only drive-virtio0 uses is
// damaged. The other disks, every chunk written and durable, are reported
// "stopped, journal kept" at their size with the bytes written, their
// errors naming no chunk of another disk; the damaged chunk is said once
// on stderr, at drive-virtio0's own offset. The --resume (chunk still
// damaged) reports chunks-failed with fetched-bytes, both this run's.
func TestRestoreGuestOneDiskDamaged(t *testing.T) {
	fixture.SkipIfShort(t)
	imgs := guestDiskImages()
	store := guestStore(t)
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-virtio0.img.fidx"))
	bad := ds[len(ds)-1] // f: drive-virtio0's alone, at 128 KiB
	p := fixture.ChunkPath(store, bad)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0xff
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	args := []string{"restore-guest", "--store", store, "--no-config", "--output-format", "json", "vm/100", out}
	var rep struct {
		guestJSON
		ChunksFailed uint64 `json:"chunks-failed"`
		FetchedBytes uint64 `json:"fetched-bytes"`
		Disks        []struct {
			Result, Error string
			Size          uint64
			DataBytes     uint64 `json:"data-bytes"`
		}
	}
	r := pbs(t, args...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %v", r.code, r)
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.out)
	}
	for i, d := range rep.Disks[:2] {
		if d.Result != "stopped, journal kept" || d.Size != uint64(len(imgs[i])) || d.DataBytes == 0 || strings.Contains(d.Error, bad.String()) {
			t.Errorf("healthy disk %d: %+v", i, d)
		}
	}
	if d := rep.Disks[2]; d.Result != "failed" || !strings.Contains(d.Error, fmt.Sprintf("at [%d,", 2*guestChunk)) {
		t.Errorf("damaged disk: %+v", d)
	}
	if n := strings.Count(r.err, "chunk "+bad.String()+" at"); n != 1 {
		t.Errorf("the damaged chunk said %d times on stderr: %s", n, r.err)
	}
	r = pbs(t, append([]string{"restore-guest", "--resume"}, args[1:]...)...)
	rep.ChunksFailed, rep.FetchedBytes, rep.ChunksFetched = 0, 0, 0
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.out)
	}
	if r.code != 1 || rep.ChunksFetched != 0 || rep.ChunksFailed != 1 || rep.FetchedBytes != uint64(len(raw)) {
		t.Errorf("resume: exit %d, chunks fetched %d, failed %d, fetched bytes %d (want 0, 1, %d)", r.code, rep.ChunksFetched, rep.ChunksFailed, rep.FetchedBytes, len(raw))
	}
}
