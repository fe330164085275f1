package main

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestResumeAfterSIGKILL: a restore from S3 (versitygw, through a 20 ms
// proxy) is SIGKILLed at 20 random points, each time resumed with
// --resume; the result is byte-exact, and no resumed run fetches a chunk
// that the journal recorded before it started. A resume against another
// snapshot is refused; the last resume leaves a completion record.
func TestResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it 20 times")
	}
	bin := filepath.Join(t.TempDir(), "pbsdirect")
	if out, err := exec.Command("go", "build", "-tags", "disable_grpc_modules", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	data := fixture.Build(21, fixture.Region{Kind: fixture.Random, Len: 96 << 16}) // 96 chunks of 64 KiB
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "127.0.0.1:1")
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	for _, bt := range []string{t0str, "2026-11-29T12:00:00Z"} {
		mustOK(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", s3.Endpoint, "--backup-type", "vm", "--backup-id", "100",
			"--backup-time", bt, "--chunk-size", "64", "drive-scsi0.img:"+img)
	}
	p := bktProxy(t, s3.Endpoint, 20*time.Millisecond)
	target := filepath.Join(t.TempDir(), "disk.img")
	jpath, err := filetarget.JournalPath(target)
	if err != nil {
		t.Fatal(err)
	}
	args := func(extra ...string) []string {
		return append(append([]string{"restore", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, "--fetchers", "2", "--jobs", "1"}, extra...),
			snap0, "drive-scsi0", target)
	}
	// journaled returns the chunks the journal records now.
	journaled := func() map[crypto.Digest]bool {
		_, done, err := restore.ReadJournal(jpath)
		if err != nil {
			return nil
		}
		return done
	}
	// watch makes the proxy count the GETs of every journaled chunk.
	watch := func(done map[crypto.Digest]bool) []crypto.Digest {
		var ds []crypto.Digest
		var rules []faultproxy.Rule
		for d := range done {
			ds = append(ds, d)
			rules = append(rules, faultproxy.Rule{Method: "GET", PathContains: chunkstore.ChunkRelPath(d)})
		}
		p.SetRules(rules...)
		return ds
	}
	// An undisturbed run sets the scale of the kill points: uniformly
	// random in [5 %, 95 %] of its time, whatever the machine's load.
	start := time.Now()
	if out, err := exec.Command(bin, append(args()[:len(args())-1], filepath.Join(t.TempDir(), "full.img"))...).CombinedOutput(); err != nil {
		t.Fatalf("undisturbed run: %v\n%s", err, out)
	}
	full := time.Since(start)
	rng := rand.New(rand.NewPCG(7, 10))
	kills := 0
	// 20 kills, and on until the journal holds something to resume.
	for i := 0; kills < 20 || len(journaled()) == 0; i++ {
		if i == 60 {
			t.Fatalf("only %d of 60 runs were still running when killed", kills)
		}
		done := journaled()
		var extra []string
		if done != nil {
			extra = []string{"--resume"}
		}
		ds := watch(done)
		cmd := exec.Command(bin, args(extra...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(full/20 + time.Duration(rng.Int64N(int64(full*9/10))))
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if err == nil {
			// It finished before the kill: start that round again.
			os.Remove(target)
			continue
		}
		kills++
		for j, n := range p.Matched() {
			if n != 0 {
				t.Fatalf("kill %d: the resumed run fetched journaled chunk %s %d times", kills, ds[j], n)
			}
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: %v, want killed: %s", i, err, stderr.String())
		}
		if got, err := os.ReadFile(target); err == nil {
			// Killed after the rename (completion record, summary):
			// the target may be there only whole.
			if !bytes.Equal(got, data) {
				t.Fatalf("kill %d: the target appeared under its name before it was complete", kills)
			}
			os.Remove(target)
			os.Remove(jpath)
			continue
		}
	}
	done := journaled()
	if len(done) == 0 {
		t.Fatalf("after %d kills, nothing was journaled", kills)
	}
	// Another snapshot: refused, and the journal is left alone.
	other := append([]string{"restore", "--resume", "--store", "s3://bkt/store", "--s3-endpoint", p.URL}, "vm/100/2026-11-29T12:00:00Z", "drive-scsi0", target)
	mustFail(t, 2, []string{"--resume refused", "2026-11-29T10:00:00Z"}, other...)
	if n := len(journaled()); n != len(done) {
		t.Fatalf("a refused resume changed the journal: %d chunks, had %d", n, len(done))
	}
	ds := watch(done)
	s := restoreJSON(t, args("--resume")[1:]...)
	for j, n := range p.Matched() {
		if n != 0 {
			t.Fatalf("the last resume fetched journaled chunk %s %d times", ds[j], n)
		}
	}
	fixture.Equal(t, target, data)
	if s.ResumedChunks != len(done) || s.ChunksFetched+uint64(s.ResumedChunks) != 96 {
		t.Errorf("summary: %d resumed, %d fetched; want %d resumed, %d in all", s.ResumedChunks, s.ChunksFetched, len(done), 96)
	}
	if _, c, err := restore.ReadCompletion(jpath); err != nil || c == nil {
		t.Errorf("journal %s does not record the completed restore: %v", jpath, err)
	}
	t.Logf("%d kills (undisturbed run %v), %d chunks journaled before the last resume", kills, full.Round(time.Millisecond), len(done))
}

// TestResumeChecksTarget: a resume trusts the target's bytes, not the
// journal. A restore from S3 stops with exit 3 (its last chunk answers 503
// past --retry-for) and keeps its partial output and journal; then a
// journaled chunk is changed in the partial output, and the journal is made
// to name the chunk that was never written, and the file system is filled
// so that only what is left to write still fits. The resume fetches both
// chunks again and the result is byte-exact.
func TestResumeChecksTarget(t *testing.T) {
	fixture.SkipIfShort(t)
	const chunk = 64 << 10
	data := fixture.Build(22, fixture.Region{Kind: fixture.Random, Len: 16 * chunk})
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "127.0.0.1:1")
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	mustOK(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", s3.Endpoint, "--backup-type", "vm", "--backup-id", "100",
		"--backup-time", t0str, "--chunk-size", "64", "drive-scsi0.img:"+img)
	last := crypto.Digest(sha256.Sum256(data[15*chunk:]))
	p := bktProxy(t, s3.Endpoint, 0, faultproxy.Rule{Method: "GET", PathContains: chunkstore.ChunkRelPath(last), Status: 503})
	// The target's file system is a 2 MiB tmpfs, filled before the resume
	// so that the image's data (1 MiB) no longer fits beside other files,
	// though what is left to write does.
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		fixture.SkipOrFail(t, "mount tmpfs (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	target := filepath.Join(mnt, "disk.img")
	args := func(extra ...string) []string {
		return append(append([]string{"restore", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, "--retry-for", "1s", "--jobs", "1"}, extra...),
			snap0, "drive-scsi0", target)
	}
	mustFail(t, 3, []string{"--resume"}, args()...)
	jpath, err := filetarget.JournalPath(target)
	if err != nil {
		t.Fatal(err)
	}
	h, done, err := restore.ReadJournal(jpath)
	if err != nil || len(done) != 15 || done[last] {
		t.Fatalf("journal after the stop: %d chunks (last one: %v), %v; want the 15 others", len(done), done[last], err)
	}
	// The partial output changed since: 8 bytes of the first chunk.
	f, err := os.OpenFile(filetarget.PartialPath(target), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XXXXXXXX"), 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A forged journal: it names the chunk that was never written.
	j, err := restore.ResumeJournal(jpath, h)
	if err != nil {
		t.Fatal(err)
	}
	j.Add(last)
	if err := j.Flush(restore.Discard{}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	var sf syscall.Statfs_t
	if err := syscall.Statfs(mnt, &sf); err != nil {
		t.Fatal(err)
	}
	if free := int64(sf.Bavail) * sf.Bsize; free > 2*chunk {
		fixture.WriteFile(t, mnt, "other", make([]byte, free-2*chunk))
	}
	p.SetRules()
	r := mustOK(t, args("--resume")...)
	if !strings.Contains(r.err, "2 chunk(s) the journal records are not on") {
		t.Errorf("resume does not say it fetches the 2 chunks again: %v", r)
	}
	fixture.Equal(t, target, data)
}
