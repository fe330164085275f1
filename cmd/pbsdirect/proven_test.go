package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/quirkproxy"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// checkNotDamage runs a restore with --on-missing zero --on-corrupt zero
// and a verify with store (extra: the flags that reach it) and checks that
// neither takes the failure for damage: both exit 3, the restore writes no
// zeros and leaves no file under the target's name, and the verify lists
// no damaged chunk.
func checkNotDamage(t *testing.T, store []string) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "r.raw")
	r := pbs(t, append(append([]string{"restore", "--on-missing", "zero", "--on-corrupt", "zero"}, store...), snap0, "drive-scsi0", target)...)
	if r.code != 3 || strings.Contains(r.out+r.err, "written as zeros") || strings.Contains(r.out+r.err, "RESTORED WITH DAMAGE") {
		t.Errorf("restore: want exit 3 and no zeros: %v", r)
	}
	noFile(t, target)
	r = pbs(t, append(append([]string{"verify", "--output-format", "json"}, store...), snap0)...)
	var rep struct {
		Damaged  int `json:"damaged-chunks"`
		ExitCode int `json:"exit-code"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != 3 || rep.ExitCode != 3 || rep.Damaged != 0 || strings.Contains(r.out, `"damaged-chunks":[`) {
		t.Errorf("verify: want exit 3 and no damaged chunk (%v): %v", err, r)
	}
}

// TestUnprovenBucketErrors: a bucket answer that proves nothing about a
// chunk (400 ExpiredToken of temporary credentials that expired during the
// run, a 400 of a code no backend classifies, 401, 403 requester pays, a
// GCS 400 UserProjectMissing) is no damage: restore and verify exit 3, and
// --on-missing/--on-corrupt zero zero-fill nothing, on S3 (versitygw) and
// GCS (fake-gcs-server). The first chunk downloads pass, the rest fail.
func TestUnprovenBucketErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw and fake-gcs-server")
	}
	e := newBadDayEnv(t)
	for _, c := range []struct {
		backend string
		status  int
		code    string
	}{
		{"s3", 400, "ExpiredToken"},
		{"s3", 400, "SomeCodeNoOneKnows"},
		{"s3", 401, "Unauthorized"},
		{"s3", 403, "RequesterPaysRequired"},
		{"gcs", 400, "UserProjectMissing"},
		{"gcs", 400, "SomeCodeNoOneKnows"},
		{"gcs", 401, "Unauthorized"},
	} {
		t.Run(c.backend+"/"+c.code, func(t *testing.T) {
			target := e.s3.Endpoint
			if c.backend == "gcs" {
				target = e.gcs.URL
			}
			p := bktProxy(t, target, 0, chunkGETs(faultproxy.Rule{After: 2, Status: c.status, Code: c.code}))
			store := []string{"--store", "s3://bkt/store", "--s3-endpoint", p.URL}
			if c.backend == "gcs" {
				t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(p.URL, "http://"))
				store = []string{"--store", "gs://gbkt/store"}
			}
			checkNotDamage(t, append(store, "--fetchers", "2", "--retry-for", "2s"))
		})
	}
}

// TestUnprovenLocalErrors: a datastore chunk file that cannot be read
// for a reason other than its bytes (EIO from the disk under it) is no
// damage: restore and verify exit 3 and nothing is zero-filled. The chunk
// file lives on an ext4 file system on a loop device whose backing file is
// then cut short: reads of its data blocks fail with EIO, its size and
// metadata stay readable.
func TestUnprovenLocalErrors(t *testing.T) {
	for _, tool := range []string{"mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			fixture.SkipOrFail(t, "%s not available: %v", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		fixture.SkipOrFail(t, "mounting needs root")
	}
	store := fixture.NewStore(t)
	backupImage(t, store, failoverImage(), "--chunk-size", "64")
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	chunk := chunkFile(store, ds[2])

	dev, backing := fixture.LoopDevice(t, 16<<20, nil)
	mnt := t.TempDir()
	sh := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			fixture.SkipOrFail(t, "%s %v: %v: %s", name, args, err, out)
		}
	}
	sh("mkfs.ext4", "-q", "-F", "-b", "1024", dev)
	sh("mount", dev, mnt)
	// 4 MiB first, so that the chunk's data lies beyond the first 2 MiB.
	if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "chunk"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Remount (no cached data), cut the disk short, put the file in place.
	sh("umount", mnt)
	sh("mount", "-o", "ro", dev, mnt)
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	if err := os.Truncate(backing, 2<<20); err != nil {
		t.Fatal(err)
	}
	sh("mount", "--bind", filepath.Join(mnt, "chunk"), chunk)
	t.Cleanup(func() { exec.Command("umount", chunk).Run() })
	if _, err := os.ReadFile(chunk); !errors.Is(err, syscall.EIO) {
		fixture.SkipOrFail(t, "reading the chunk: %v, want EIO", err)
	}
	checkNotDamage(t, []string{"--store", store})
}

// TestRegionQuoted: an S3 region mismatch whose message names the bucket's
// region in double quotes (`expecting "eu-central-1"`, no
// x-amz-bucket-region header) is followed like the quoted one of AWS.
func TestRegionQuoted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw")
	}
	data := fixture.Build(7, fixture.Region{Kind: fixture.Random, Len: 1 << 20})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "")
	os.Unsetenv("STORAGE_EMULATOR_HOST")
	mustOK(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", s3.Endpoint, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "drive-scsi0.img:"+img)
	p, err := quirkproxy.Start(s3.Endpoint, quirkproxy.Quirks{BucketRegion: "eu-central-1", RegionError: 400, RegionQuoted: true,
		AccessKey: testenv.S3AccessKey, Secret: testenv.S3SecretKey, TargetRegion: testenv.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	target := filepath.Join(t.TempDir(), "r.raw")
	r := pbs(t, "restore", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, "--s3-region", "eu-west-1", snap0, "drive-scsi0", target)
	if r.code != 0 || !strings.Contains(r.err, "--s3-region eu-central-1") || !strings.Contains(r.err, "the bucket of s3://bkt/store is in region eu-central-1") {
		t.Fatalf("want the region followed and named: %v", r)
	}
	fixture.Equal(t, target, data)
}

// TestGCSNoCredentials: a gs:// store with no Application Default
// Credentials exits 3 (credentials, not data) with a hint at how to give
// them.
func TestGCSNoCredentials(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{
		"STORAGE_EMULATOR_HOST": "", "GOOGLE_APPLICATION_CREDENTIALS": "", "HOME": home,
		"CLOUDSDK_CONFIG": filepath.Join(home, "gcloud"), "NO_GCE_CHECK": "True", "GCE_METADATA_HOST": "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
	mustFail(t, 3, []string{"GOOGLE_APPLICATION_CREDENTIALS", "gcloud auth application-default login"},
		"restore", "--store", "gs://no-such-bucket-pbsdirect/store", snap0, "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
}
