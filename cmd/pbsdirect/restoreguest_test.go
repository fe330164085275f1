package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

const guestChunk = 64 << 10

var guestDiskNames = []string{"drive-scsi0", "drive-scsi1", "drive-virtio0"}

// guestImages are a VM's three disks in 64 KiB chunks: the first two
// share chunks a and b (the first uses a twice), the first and third hold
// a zero chunk.
func guestDiskImages() [][]byte {
	chunk := func(seed uint64) []byte {
		return fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: guestChunk})
	}
	a, b, c, d, e, f := chunk(11), chunk(12), chunk(13), chunk(14), chunk(15), chunk(16)
	z := make([]byte, guestChunk)
	return [][]byte{slices.Concat(a, b, c, z, a), slices.Concat(b, d, a), slices.Concat(e, z, f)}
}

const guestConf = "cores: 2\nscsi0: local:vm-100-disk-0\n"

// guestBucket backs the three disks and a configuration up as vm/100 at
// t0str (64 KiB chunks), serves the datastore from an S3 server through a
// proxy that counts the GETs of each chunk (rules in the order of digests,
// then one for every chunk GET, with delay added to each chunk GET), and
// returns the store arguments, the proxy and the digests.
func guestBucket(t *testing.T, delay time.Duration) ([]string, *faultproxy.Proxy, []crypto.Digest) {
	t.Helper()
	local := guestStore(t)
	var digests []crypto.Digest
	for _, n := range guestDiskNames {
		_, ds := fixture.Digests(t, filepath.Join(local, "vm", "100", t0str, n+".img.fidx"))
		for _, d := range ds {
			if !slices.Contains(digests, d) {
				digests = append(digests, d)
			}
		}
	}
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	var rules []faultproxy.Rule
	for _, d := range digests {
		rules = append(rules, faultproxy.Rule{Method: "GET", PathContains: d.String()})
	}
	rules = append(rules, faultproxy.Rule{Method: "GET", PathContains: "/.chunks/", Delay: delay})
	p := bktProxy(t, s3.Endpoint, 0, rules...)
	bktSetEnv(t, "")
	return []string{"--store", "s3://bkt/ds", "--s3-endpoint", p.URL}, p, digests
}

// guestStore backs the three disks and a configuration up as vm/100 at
// t0str (64 KiB chunks) into a new datastore directory and returns it.
func guestStore(t *testing.T) string {
	t.Helper()
	local := fixture.NewStore(t)
	src := t.TempDir()
	args := []string{"backup", "--store", local, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64"}
	for i, img := range guestDiskImages() {
		args = append(args, guestDiskNames[i]+".img:"+fixture.WriteFile(t, src, guestDiskNames[i], img))
	}
	args = append(args, "qemu-server.conf:"+fixture.WriteFile(t, src, "qemu-server.conf", []byte(guestConf)))
	mustOK(t, args...)
	return local
}

// guestJSON is the part of restore-guest's JSON result the tests read.
type guestJSON struct {
	Disks []struct {
		Archive, Target, Result string
		Size                    uint64
		DataBytes               uint64 `json:"data-bytes"`
		ResumedChunks           int    `json:"resumed-chunks"`
	}
	Config struct {
		Path    string
		Written bool
		Reason  string
	}
	SharedChunks  int    `json:"shared-chunks"`
	ChunksFetched uint64 `json:"chunks-fetched"`
	ExitCode      int    `json:"exit-code"`
}

// TestRestoreGuestE2E: a 3-disk VM snapshot in an S3 bucket, two disks
// sharing chunks, is restored in one run to two files and a loop device:
// byte-exact, every chunk fetched once (counted at the proxy; the zero
// chunk never), the configuration written, one report. A run with one
// target refused (an existing file) exits 2 before any chunk is fetched
// and leaves every target as it was; an archive --map names that the
// snapshot lacks is exit 2 naming those it has.
func TestRestoreGuestE2E(t *testing.T) {
	fixture.SkipIfShort(t)
	imgs := guestDiskImages()
	storeArgs, p, digests := guestBucket(t, 0)
	zero := fixture.ZeroDigest(guestChunk, nil)
	dev, _ := fixture.LoopDevice(t, int64(len(imgs[2])), []byte{0xa5, 0x5a, 0x01})
	out := t.TempDir()

	r := mustOK(t, append(append([]string{"restore-guest", "--output-format", "json"}, storeArgs...), "--map", "drive-virtio0="+dev, "vm/100", out)...)
	var rep guestJSON
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("restore-guest JSON: %v\n%s", err, r.out)
	}
	targets := []string{filepath.Join(out, "drive-scsi0.img"), filepath.Join(out, "drive-scsi1.img"), dev}
	if len(rep.Disks) != 3 || rep.ExitCode != 0 || rep.SharedChunks != 2 || rep.ChunksFetched != 6 || rep.Config.Path != filepath.Join(out, "qemu-server.conf") || !rep.Config.Written {
		t.Errorf("report: %s", r.out)
	}
	for i, d := range rep.Disks {
		if d.Archive != guestDiskNames[i]+".img.fidx" || d.Target != targets[i] || d.Result != "restored" || d.Size != uint64(len(imgs[i])) {
			t.Errorf("disk %d in the report: %+v", i, d)
		}
		fixture.Equal(t, targets[i], imgs[i])
	}
	fixture.Equal(t, filepath.Join(out, "qemu-server.conf"), []byte(guestConf))
	counts := p.Matched()
	for i, d := range digests {
		want := 1
		if d == zero {
			want = 0
		}
		if counts[i] != want {
			t.Errorf("chunk %s fetched %d times, want %d", d, counts[i], want)
		}
	}
	if len(digests) != 7 { // a b c z d e f
		t.Errorf("%d distinct digests, want 7", len(digests))
	}

	t.Run("text report", func(t *testing.T) {
		out := t.TempDir()
		r := mustOK(t, append(append([]string{"restore-guest"}, storeArgs...), "--no-config", "vm/100", out)...)
		for _, w := range []string{"drive-scsi0.img.fidx", "drive-virtio0.img.fidx", "restored", "2 shared by several disks and fetched once"} {
			if !strings.Contains(r.out, w) {
				t.Errorf("text report lacks %q: %v", w, r)
			}
		}
		if _, err := os.Stat(filepath.Join(out, "qemu-server.conf")); err == nil {
			t.Errorf("--no-config wrote the configuration")
		}
	})

	t.Run("refused target", func(t *testing.T) {
		out := t.TempDir()
		existing := fixture.WriteFile(t, out, "drive-scsi1.img", []byte("keep me"))
		garbage := bytes.Repeat([]byte{0x3c}, len(imgs[2]))
		if err := os.WriteFile(dev, garbage, 0); err != nil {
			t.Fatal(err)
		}
		before := p.Matched()[len(digests)]
		mustFail(t, 2, []string{"drive-scsi1.img", "exists"}, append(append([]string{"restore-guest"}, storeArgs...), "--map", "drive-virtio0="+dev, "vm/100", out)...)
		if n := p.Matched()[len(digests)] - before; n != 0 {
			t.Errorf("%d chunks fetched before the refusal", n)
		}
		ents, _ := os.ReadDir(out)
		if len(ents) != 1 {
			t.Errorf("the refused run left %d entries in DIR", len(ents))
		}
		fixture.Equal(t, existing, []byte("keep me"))
		fixture.Equal(t, dev, garbage)
	})

	t.Run("unknown archive", func(t *testing.T) {
		mustFail(t, 2, []string{"drive-scsi7.img.fidx", "drive-scsi0.img.fidx, drive-scsi1.img.fidx, drive-virtio0.img.fidx"},
			append(append([]string{"restore-guest"}, storeArgs...), "--map", "drive-scsi7=/tmp/x", "vm/100", t.TempDir())...)
	})
}

// TestRestoreGuestInterruptedResume: a guest restore interrupted by
// SIGINT (the real process, chunks served slowly) exits 130, reports
// each disk interrupted at its size with exit 130, and keeps what its
// disks' journals record; the same run with --resume fetches
// only the rest and leaves every disk byte-exact.
func TestRestoreGuestInterruptedResume(t *testing.T) {
	fixture.SkipIfShort(t)
	imgs := guestDiskImages()
	storeArgs, p, digests := guestBucket(t, 700*time.Millisecond)
	chunkGETs := func() int { return p.Matched()[len(digests)] }
	out := t.TempDir()
	args := append(append([]string{"restore-guest", "--output-format", "json"}, storeArgs...), "--jobs", "1", "--writers", "0", "--fetchers", "1", "vm/100", out)
	stdout, stderr := interruptGuest(t, args, chunkGETs)
	if !strings.Contains(stderr.String(), "--resume") {
		t.Errorf("the interrupted run does not name --resume: %s", stderr.String())
	}
	// The report says what each disk is: its size, interrupted, the
	// exit code of the whole run.
	var stopped struct {
		Disks []struct {
			Size     uint64
			Result   string
			ExitCode int `json:"exit-code"`
		}
		ExitCode int `json:"exit-code"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &stopped); err != nil {
		t.Fatalf("interrupted restore-guest JSON: %v\n%s", err, stdout.String())
	}
	if stopped.ExitCode != 130 || len(stopped.Disks) != 3 {
		t.Errorf("interrupted report: %s", stdout.String())
	}
	for i, d := range stopped.Disks {
		if d.Size != uint64(len(imgs[i])) || d.ExitCode != 130 || (d.Result != "interrupted" && d.Result != "stopped, journal kept") {
			t.Errorf("interrupted report of %s: %+v, want size %d, interrupted, exit 130", guestDiskNames[i], d, len(imgs[i]))
		}
	}
	first := chunkGETs()

	// The resume's text summary says how many chunks it resumed.
	r := mustOK(t, append(append([]string{"restore-guest", "--resume"}, storeArgs...), "vm/100", out)...)
	resumed := 0
	if _, rest, ok := strings.Cut(r.out, "resumed: "); ok {
		fmt.Sscanf(rest, "%d", &resumed)
	}
	for i := range imgs {
		fixture.Equal(t, filepath.Join(out, guestDiskNames[i]+".img"), imgs[i])
	}
	again := chunkGETs() - first
	if resumed == 0 || again >= 6 || again == 0 {
		t.Errorf("resume: %d chunks resumed, %d fetched again (of 6; %d fetched before the interruption): %v", resumed, again, first, r)
	}
	fixture.Equal(t, filepath.Join(out, "qemu-server.conf"), []byte(guestConf))

	// Once more: every disk is complete, the configuration is there as
	// stored; nothing is fetched, and no rate is made up for it.
	before := chunkGETs()
	r = mustOK(t, append(append([]string{"restore-guest", "--resume"}, storeArgs...), "vm/100", out)...)
	if strings.Count(r.out, " complete") != 3 || chunkGETs() != before || !strings.Contains(r.out, "(nothing to fetch)") {
		t.Errorf("--resume of a complete guest: %d chunks fetched: %v", chunkGETs()-before, r)
	}
}

// interruptGuest runs the real process with args (a restore-guest whose
// chunks are served slowly), interrupts it with SIGINT once chunkGETs
// counts three chunk GETs, and fails the test unless it exits 130; it
// returns its stdout and stderr.
func interruptGuest(t *testing.T, args []string, chunkGETs func() int) (stdout, stderr *bytes.Buffer) {
	t.Helper()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCLI+"=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for chunkGETs() < 3 {
		select {
		case <-done:
			t.Fatalf("the restore ended before it was under way: %v: %s", werr, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("the restore did not get under way (%d chunk GETs)", chunkGETs())
		}
	}
	signalAndWait(t, cmd, done, syscall.SIGINT, 30*time.Second, stderr)
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted: %v, want exit 130; stderr: %s", werr, stderr.String())
	}
	return stdout, stderr
}
