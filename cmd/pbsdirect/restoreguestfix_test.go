package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestRestoreGuestConfigRefused: a configuration path that is a disk's
// target (the same path, a hard link or a symbolic link to it), not a
// regular file, or an existing file without --force is refused with exit 2
// before any chunk is fetched, nothing written; every refusal of the run
// (the configuration's and the disks' targets') is said in one error.
func TestRestoreGuestConfigRefused(t *testing.T) {
	fixture.SkipIfShort(t)
	storeArgs, p, digests := guestBucket(t, 0)
	keep := []byte("keep me")
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, out string) []string // the files there before, and the flags
		flags func(out string) []string
		want  []string
	}{
		{"a disk's target", nil, func(out string) []string {
			return []string{"--force", "--config", filepath.Join(out, "drive-virtio0.img")}
		}, []string{"--config", "drive-virtio0.img.fidx"}},
		{"a hard link to a disk's target", func(t *testing.T, out string) []string {
			fixture.WriteFile(t, out, "drive-scsi0.img", keep)
			if err := os.Link(filepath.Join(out, "drive-scsi0.img"), filepath.Join(out, "conf")); err != nil {
				t.Fatal(err)
			}
			return []string{"drive-scsi0.img", "conf"}
		}, func(out string) []string { return []string{"--force", "--config", filepath.Join(out, "conf")} },
			[]string{"--config", "drive-scsi0.img.fidx"}},
		{"a symbolic link to a disk's target", func(t *testing.T, out string) []string {
			fixture.WriteFile(t, out, "drive-scsi1.img", keep)
			if err := os.Symlink("drive-scsi1.img", filepath.Join(out, "conf")); err != nil {
				t.Fatal(err)
			}
			return []string{"drive-scsi1.img"}
		}, func(out string) []string { return []string{"--force", "--config", filepath.Join(out, "conf")} },
			[]string{"--config", "drive-scsi1.img.fidx"}},
		{"a directory", func(t *testing.T, out string) []string {
			if err := os.Mkdir(filepath.Join(out, "conf"), 0o755); err != nil {
				t.Fatal(err)
			}
			return nil
		}, func(out string) []string { return []string{"--force", "--config", filepath.Join(out, "conf")} },
			[]string{"conf", "not a regular file"}},
		{"existing, with a disk's target existing", func(t *testing.T, out string) []string {
			fixture.WriteFile(t, out, "qemu-server.conf", keep)
			fixture.WriteFile(t, out, "drive-scsi1.img", keep)
			return []string{"qemu-server.conf", "drive-scsi1.img"}
		}, func(string) []string { return nil }, []string{"qemu-server.conf", "drive-scsi1.img", "exists"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			var kept []string
			if c.setup != nil {
				kept = c.setup(t, out)
			}
			before, _ := os.ReadDir(out)
			fetched := p.Matched()[len(digests)]
			args := append(append(append([]string{"restore-guest"}, storeArgs...), c.flags(out)...), "vm/100", out)
			mustFail(t, 2, c.want, args...)
			if n := p.Matched()[len(digests)] - fetched; n != 0 {
				t.Errorf("%d chunks fetched before the refusal", n)
			}
			after, _ := os.ReadDir(out)
			if len(after) != len(before) {
				t.Errorf("the refused run left %d entries in DIR, %d before", len(after), len(before))
			}
			for _, k := range kept {
				fixture.Equal(t, filepath.Join(out, k), keep)
			}
		})
	}
}

// TestRestoreGuestSalvagesBadCopy: a chunk two disks share whose only
// copy is kept aside as damaged (<digest>.0.bad) and intact is recovered
// from it, as restore does: the disks are byte-exact, exit 0, and the
// report (JSON and text) names the chunk and the copy.
func TestRestoreGuestSalvagesBadCopy(t *testing.T) {
	imgs := guestDiskImages()
	store := guestStore(t)
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi1.img.fidx"))
	lost := ds[0] // b, which the first two disks hold
	chunk := fixture.ChunkPath(store, lost)
	if err := os.Rename(chunk, filepath.Join(filepath.Dir(chunk), chunkstore.BadName(lost, 0))); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := mustOK(t, "restore-guest", "--output-format", "json", "--store", store, "vm/100", out)
	var rep struct {
		Salvaged []struct{ Digest, Copy string } `json:"recovered-from-bad-copies"`
		Count    int                             `json:"recovered-from-bad-copies-count"`
		ExitCode int                             `json:"exit-code"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("restore-guest JSON: %v\n%s", err, r.out)
	}
	if rep.Count != 1 || len(rep.Salvaged) != 1 || rep.Salvaged[0].Digest != lost.String() || !strings.HasSuffix(rep.Salvaged[0].Copy, ".0.bad") || rep.ExitCode != 0 {
		t.Errorf("report of the salvage: %s", r.out)
	}
	for i, img := range imgs {
		fixture.Equal(t, filepath.Join(out, guestDiskNames[i]+".img"), img)
	}
	r = mustOK(t, "restore-guest", "--store", store, "vm/100", t.TempDir())
	for _, w := range []string{"recovered from a .bad copy", lost.String()} {
		if !strings.Contains(r.out, w) {
			t.Errorf("text report lacks %q: %v", w, r)
		}
	}
}
