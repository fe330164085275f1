package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestBackupOnlyNewWorkS3: backed up again unchanged into a bucket, an
// image uploads no chunk and reads none back (no PUT, no GET of a chunk,
// counted at a proxy), its chunks known from the previous snapshot of the
// group and vouched for by one HEAD each (stamped in a second before that
// snapshot's manifest or, in its second, by the writer's time each object
// carries: right after the first backup too); with one chunk changed, that chunk alone is asked for (a
// HEAD, before it is compressed) and uploaded (one PUT), and the snapshot
// restores byte-exact. Plain and encrypted; a backup with another key
// (or none) does not count on an encrypted previous snapshot.
func TestBackupOnlyNewWorkS3(t *testing.T) {
	fixture.SkipIfShort(t)
	s3 := testenv.StartS3(t)
	bktSetEnv(t, "127.0.0.1:1")
	const cs = 64 << 10
	key, _ := fixture.Key(t, 11)
	keyfile := fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")
	count := []faultproxy.Rule{
		{Method: "PUT", PathContains: "/.chunks/"},
		{Method: "HEAD", PathContains: "/.chunks/"},
		{Method: "GET", PathContains: "/.chunks/"},
	}
	p := bktProxy(t, s3.Endpoint, 0)
	for i, c := range []struct {
		name string
		key  []string
	}{
		{"plain", nil},
		{"encrypted", []string{"--keyfile", keyfile}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bucket := []string{"plainbk", "encbk"}[i]
			s3.Bucket(t, bucket)
			dir := t.TempDir()
			data := fixture.Build(uint64(40+i), fixture.Region{Kind: fixture.Random, Len: 6 * cs}, fixture.Region{Kind: fixture.Zero, Len: 2 * cs},
				fixture.Region{Kind: fixture.Text, Len: 4 * cs})
			img := fixture.WriteFile(t, dir, "disk.raw", data)
			const withData = 10
			backupAt := func(time string, extra ...string) (backupSummary, [3]int) {
				t.Helper()
				p.SetRules(count...)
				args := append([]string{"backup", "--store", "s3://" + bucket + "/store", "--s3-endpoint", p.URL, "--backup-type", "vm", "--backup-id", "100",
					"--backup-time", time, "--chunk-size", "64", "--output-format", "json"}, c.key...)
				args = append(append(args, extra...), "drive-scsi0.img:"+img)
				r := pbs(t, args...)
				var sum backupSummary
				if r.code != 0 || json.Unmarshal([]byte(r.out), &sum) != nil {
					t.Fatalf("backup at %s: %v", time, r)
				}
				m := p.Matched()
				return sum, [3]int{m[0], m[1], m[2]}
			}
			first, _ := backupAt("2026-11-01T00:00:00Z")
			if first.Uploaded != withData || first.Previous != "" {
				t.Fatalf("first backup: %d chunks uploaded, previous %q; want %d, none", first.Uploaded, first.Previous, withData)
			}

			// The first backup wrote its manifest at once, likely in the
			// second of its last chunks (S3 stamps whole seconds): backed up
			// again right away, the chunks stamped in that second are put in
			// order by the writer's times their objects carry, and none is
			// read back.
			settled, reqs := backupAt("2026-11-01T12:00:00Z")
			if reqs != [3]int{0, withData + 1, 0} || settled.Uploaded != 0 || settled.KnownPrevious != withData || settled.FoundPresent != 0 ||
				settled.Previous != "vm/100/2026-11-01T00:00:00Z" || !settled.ZeroExisting {
				t.Errorf("unchanged image backed up right after: chunk PUT/HEAD/GET %v, uploaded %d, known %d, found %d, previous %q; want [0 %d 0] (a HEAD each, the zero chunk's too, nothing read back), %d known",
					reqs, settled.Uploaded, settled.KnownPrevious, settled.FoundPresent, settled.Previous, withData+1, withData)
			}

			again, reqs := backupAt("2026-11-02T00:00:00Z")
			if reqs != [3]int{0, withData + 1, 0} || again.Uploaded != 0 || again.UploadedBytes != 0 || again.KnownPrevious != withData || again.Existing != withData ||
				again.FoundPresent != 0 || again.Previous != "vm/100/2026-11-01T12:00:00Z" || !again.ZeroExisting {
				t.Errorf("unchanged image backed up again: chunk PUT/HEAD/GET %v, uploaded %d (%d bytes), known %d, found %d, existing %d, previous %q; want [0 %d 0] (a HEAD each, the zero chunk's too), %d known from vm/100/2026-11-01T12:00:00Z",
					reqs, again.Uploaded, again.UploadedBytes, again.KnownPrevious, again.FoundPresent, again.Existing, again.Previous, withData+1, withData)
			}

			changed := append([]byte(nil), data...)
			copy(changed[2*cs:3*cs], fixture.Build(99, fixture.Region{Kind: fixture.Random, Len: cs}))
			if err := os.WriteFile(img, changed, 0o644); err != nil {
				t.Fatal(err)
			}
			one, reqs := backupAt("2026-11-03T00:00:00Z")
			if reqs != [3]int{1, withData + 1, 0} || one.Uploaded != 1 || one.KnownPrevious != withData-1 || one.Previous != "vm/100/2026-11-02T00:00:00Z" {
				t.Errorf("one chunk changed: chunk PUT/HEAD/GET %v, uploaded %d, known %d, previous %q; want [1 %d 0], 1 uploaded, %d known",
					reqs, one.Uploaded, one.KnownPrevious, one.Previous, withData+1, withData-1)
			}
			out := filepath.Join(dir, "out.raw")
			if r := pbs(t, append([]string{"restore", "--store", "s3://" + bucket + "/store", "--s3-endpoint", s3.Endpoint, "vm/100/2026-11-03T00:00:00Z", "drive-scsi0", out}, c.key...)...); r.code != 0 {
				t.Fatalf("restore: %v", r)
			}
			fixture.Equal(t, out, changed)

			// --no-previous asks for every chunk (and reads each back).
			all, reqs := backupAt("2026-11-04T00:00:00Z", "--no-previous")
			if all.KnownPrevious != 0 || all.FoundPresent != withData || all.Previous != "" || reqs[0] != 0 || reqs[1] < withData {
				t.Errorf("--no-previous: known %d, found %d, previous %q, chunk PUT/HEAD/GET %v; want every chunk asked for and found", all.KnownPrevious, all.FoundPresent, all.Previous, reqs)
			}
			if c.key == nil {
				return
			}
			// Plain after encrypted: other digests, nothing counted on.
			plain, _ := backupAt("2026-11-05T00:00:00Z", "--crypt-mode", "none")
			if plain.Previous != "" || plain.KnownPrevious != 0 || plain.Uploaded != withData {
				t.Errorf("plain backup after encrypted ones: previous %q, known %d, uploaded %d; want none, 0, %d", plain.Previous, plain.KnownPrevious, plain.Uploaded, withData)
			}
		})
	}
}

// TestBackupOnlyNewWorkGCS: into a GCS bucket too, an unchanged image backed
// up again uploads nothing, its chunks known from the previous snapshot
// (vouched for by their objects' update times).
func TestBackupOnlyNewWorkGCS(t *testing.T) {
	fixture.SkipIfShort(t)
	gcs := testenv.StartGCS(t, "gbkt")
	bktSetEnv(t, gcs.Host)
	const cs = 64 << 10
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Build(45, fixture.Region{Kind: fixture.Random, Len: 5 * cs}))
	var sums []backupSummary
	for _, btime := range []string{"2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"} {
		r := pbs(t, "backup", "--store", "gs://gbkt/store", "--backup-type", "vm", "--backup-id", "100", "--backup-time", btime,
			"--chunk-size", "64", "--output-format", "json", "drive-scsi0.img:"+img)
		var sum backupSummary
		if r.code != 0 || json.Unmarshal([]byte(r.out), &sum) != nil {
			t.Fatalf("backup at %s: %v", btime, r)
		}
		sums = append(sums, sum)
	}
	if s := sums[1]; s.Uploaded != 0 || s.KnownPrevious != 5 || s.FoundPresent != 0 || s.Previous != "vm/100/2026-11-01T00:00:00Z" {
		t.Errorf("unchanged image backed up again: uploaded %d, known %d, found %d, previous %q; want 0, 5 known from the first", s.Uploaded, s.KnownPrevious, s.FoundPresent, s.Previous)
	}
}
