package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestMessages: each fact once, hints only where they apply, nearest
// snapshots for a wrong time, and the backup summary's words.
func TestMessages(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(61)
	r := mustOK(t, append([]string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str}, "drive-scsi0.img:"+fixture.WriteFile(t, t.TempDir(), "d.raw", data))...)
	for _, gone := range []string{"index positions", "zero chunk included", "new chunks stored"} {
		if strings.Contains(r.out, gone) {
			t.Errorf("backup summary still says %q: %v", gone, r)
		}
	}
	// 4 chunks: 3 with data, 1 all zeros; restore says the same of the
	// snapshot (3 fetched, 1 zero chunk), and the stored zero chunk is
	// named as such, not counted among the chunks with data.
	for _, want := range []string{"4 chunks: 3 with data (0 repeated in this backup), 1 all zeros (4.00 MiB)",
		"written to the store: 3 chunks with data + the zero chunk ("} {
		if !strings.Contains(r.out, want) {
			t.Errorf("backup summary lacks %q: %v", want, r)
		}
	}
	if rs := restoreJSON(t, "--store", store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "r.raw")); rs.ChunksFetched != 3 || rs.ZeroChunks != 1 {
		t.Errorf("restore: %d chunks fetched, %d zero chunks; want 3 and 1 as the backup said", rs.ChunksFetched, rs.ZeroChunks)
	}
	r = mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", "2026-11-29T12:00:00Z",
		"--output-format", "json", "drive-scsi0.img:"+fixture.WriteFile(t, t.TempDir(), "d.raw", data))
	var bs backupSummary
	if err := json.Unmarshal([]byte(r.out), &bs); err != nil {
		t.Fatalf("backup JSON: %v\n%s", err, r.out)
	}
	if bs.Chunks != 4 || bs.ZeroChunks != 1 || bs.Uploaded != 0 || bs.Existing != 3 || bs.DedupHits != 0 || bs.ZeroUploaded || !bs.ZeroExisting {
		t.Errorf("second backup JSON: %+v; want 4 chunks, 1 zero, 3 with data already there, the zero chunk already there", bs)
	}
	dir := t.TempDir()

	t.Run("wrong-time-lists-nearest", func(t *testing.T) {
		mustFail(t, 1, []string{"no such snapshot", "has 2 snapshot(s), nearest: 2026-11-29T10:00:00Z, 2026-11-29T12:00:00Z"},
			"restore", "--store", store, "vm/100/2026-11-29T11:00:00Z", "drive-scsi0", filepath.Join(dir, "a.raw"))
		mustFail(t, 1, []string{"group vm/101 has no finished snapshot"},
			"restore", "--store", store, "vm/101/2026-11-29T11:00:00Z", "drive-scsi0", filepath.Join(dir, "a.raw"))
	})

	t.Run("missing-chunk-once", func(t *testing.T) {
		s2 := fixture.NewStore(t)
		backupImage(t, s2, data)
		_, ds := fixture.Digests(t, fixture.SnapPath(s2, fixture.Snap(t, "", "vm", "100", fixture.T0), "drive-scsi0.img.fidx"))
		path := fixture.ChunkPath(s2, ds[0])
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		r := mustFail(t, 1, []string{path + ": not found"}, "restore", "--store", s2, snap0, "drive-scsi0", filepath.Join(dir, "b.raw"))
		if n := strings.Count(r.err, path); n != 1 || strings.Count(r.err, "chunk "+ds[0].String()) != 1 || strings.Contains(r.err, "no such file") {
			t.Errorf("the chunk's path (%d times), digest or cause repeated: %v", n, r)
		}
		r = mustFail(t, 1, nil, "verify", "--store", s2)
		if n := strings.Count(r.out, path); n != 1 || strings.Contains(r.out, "no such file") {
			t.Errorf("verify names the chunk's path %d times: %v", n, r)
		}
		if strings.Contains(r.out+r.err, "--keyfile") {
			t.Errorf("a plain store's verify should not ask for --keyfile: %v", r)
		}
		r = mustFail(t, 1, []string{path}, "drill", "--store", s2, snap0, "drive-scsi0", filepath.Join(dir, "c.raw"))
		if strings.Contains(r.out, path) {
			t.Errorf("drill says its error on stdout and stderr: %v", r)
		}
	})

	t.Run("encrypted-without-key", func(t *testing.T) {
		key, _ := fixture.Key(t, 6)
		kf := fixture.KeyFile(t, dir, "key.json", key, crypto.KDFNone, "")
		s3 := fixture.NewStore(t)
		backupImage(t, s3, data, "--keyfile", kf)
		// No damage: exit 3, naming the key's fingerprint.
		_, cc := fixture.Key(t, 6)
		mustFail(t, 3, []string{"--keyfile", cc.Fingerprint().String()}, "restore", "--store", s3, snap0, "drive-scsi0", filepath.Join(dir, "d.raw"))
	})

	t.Run("malformed-name-once", func(t *testing.T) {
		for _, ref := range []string{"vm/a-b!/2026", "vm/1/2026-13-01T00:00:00Z", "vmx/1"} {
			r := mustFail(t, 2, []string{ref}, "restore", "--store", store, ref, "drive-scsi0", filepath.Join(dir, "m.raw"))
			if n := strings.Count(r.err, ref); n != 1 {
				t.Errorf("%s named %d times: %v", ref, n, r)
			}
		}
	})

	t.Run("drill-failed-restore-has-no-time", func(t *testing.T) {
		r := mustFail(t, 1, nil, "drill", "--store", store, "--output-format", "json", "vm/100/2026-11-29T11:00:00Z", "drive-scsi0", filepath.Join(dir, "e.raw"))
		if strings.Contains(r.out, "time-to-restore") {
			t.Errorf("a drill whose restore failed reports a time to restore: %v", r)
		}
	})

	t.Run("usage-exit-2", func(t *testing.T) {
		img := fixture.WriteFile(t, dir, "u.raw", data)
		for _, args := range [][]string{
			{"backup", "--store", store, "a.img:" + img, "a.img:" + img},
			{"snapshots", "--store", "s3://"},
			{"snapshots", "--store", "s3:/bucket"},
			{"snapshots", "--store", "gs:bucket"},
			{"verify", "--store", "S3://bucket"},
		} {
			mustFail(t, 2, nil, args...)
		}
	})
}
