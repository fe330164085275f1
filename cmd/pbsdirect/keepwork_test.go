package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// keepChunk is the chunk size of the keep-work tests' image.
const keepChunk = 64 << 10

// keepSetup backs up a 16-chunk random image to S3 (versitygw) and returns
// it, its last chunk's digest, a fault proxy in front of the server and the
// restore arguments through it (--jobs 1, --retry-for 1s) for target.
func keepSetup(t *testing.T) (data []byte, last crypto.Digest, p *faultproxy.Proxy, args func(target string, extra ...string) []string) {
	t.Helper()
	data = fixture.Build(23, fixture.Region{Kind: fixture.Random, Len: 16 * keepChunk})
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "127.0.0.1:1")
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	mustOK(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", s3.Endpoint, "--backup-type", "vm", "--backup-id", "100",
		"--backup-time", t0str, "--chunk-size", "64", "drive-scsi0.img:"+img)
	last = crypto.Digest(sha256.Sum256(data[15*keepChunk:]))
	p = bktProxy(t, s3.Endpoint, 0)
	args = func(target string, extra ...string) []string {
		return append(append([]string{"restore", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, "--retry-for", "1s", "--jobs", "1"}, extra...),
			snap0, "drive-scsi0", target)
	}
	return data, last, p, args
}

// keepJournal returns the chunks the journal of target records.
func keepJournal(t *testing.T, target string) map[crypto.Digest]bool {
	t.Helper()
	jpath, err := filetarget.JournalPath(target)
	if err != nil {
		t.Fatal(err)
	}
	_, done, err := restore.ReadJournal(jpath)
	if err != nil {
		t.Fatalf("journal of %s: %v", target, err)
	}
	return done
}

// keepWatch makes the proxy count the GETs of every chunk of done, after
// the rules first (which keep acting); it returns the index of the first
// counting rule in Matched.
func keepWatch(p *faultproxy.Proxy, done map[crypto.Digest]bool, first ...faultproxy.Rule) int {
	rules := append([]faultproxy.Rule(nil), first...)
	for d := range done {
		rules = append(rules, faultproxy.Rule{Method: "GET", PathContains: chunkstore.ChunkRelPath(d)})
	}
	p.SetRules(rules...)
	return len(first)
}

// keepRefetched fails the test when a watched chunk was fetched again.
func keepRefetched(t *testing.T, p *faultproxy.Proxy, from int) {
	t.Helper()
	for i, n := range p.Matched()[from:] {
		if n != 0 {
			t.Errorf("the resume fetched a durable chunk again (%d times; watch rule %d)", n, i)
		}
	}
}

// TestStoppedRestoreKeepsWork: a restore to a new file that stops — its
// last chunk missing (404), the store failing past --retry-for (500), or
// interrupted (SIGTERM) — keeps its partial output (under the partial name,
// never the target's) and its journal, and says how to continue; the
// --resume that follows fetches no chunk the journal records (counted at
// the proxy) and leaves the image byte-exact (the missing chunk as zeros
// with --on-missing zero, exit 1).
func TestStoppedRestoreKeepsWork(t *testing.T) {
	fixture.SkipIfShort(t)
	data, last, p, args := keepSetup(t)
	lastGET := faultproxy.Rule{Method: "GET", PathContains: chunkstore.ChunkRelPath(last)}
	missing := lastGET
	missing.Status, missing.Code = 404, "NoSuchKey"
	failing := lastGET
	failing.Status = 500
	slow := lastGET
	slow.Delay = time.Minute
	zeroed := append([]byte(nil), data...)
	clear(zeroed[15*keepChunk:])
	for _, c := range []struct {
		name      string
		rule      faultproxy.Rule
		interrupt bool
		code      int
		want      []string
		resume    []string // extra flags of the resume
		keepRule  bool     // the fault stays for the resume
		resCode   int      // the resume's exit code
		result    []byte   // the image after the resume
	}{
		{name: "missing", rule: missing, code: 1, want: []string{"--resume", "--on-missing zero", "another --store"},
			resume: []string{"--on-missing", "zero"}, keepRule: true, resCode: 1, result: zeroed},
		{name: "store-500", rule: failing, code: 3, want: []string{"--resume", "credentials"}, result: data},
		{name: "interrupted", rule: slow, interrupt: true, code: 143, want: []string{"interrupted (SIGTERM)", "--resume to continue it"}, result: data},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "disk.img")
			p.SetRules(c.rule)
			var r result
			if c.interrupt {
				ctx, cancel := context.WithCancelCause(context.Background())
				go func() {
					// Interrupted once the 15 other chunks are durable and
					// the last one is waited for.
					jpath, _ := filetarget.JournalPath(target)
					for {
						if _, done, err := restore.ReadJournal(jpath); err == nil && len(done) == 15 {
							break
						}
						time.Sleep(20 * time.Millisecond)
					}
					cancel(&cli.InterruptedError{Sig: syscall.SIGTERM})
				}()
				var out, errb bytes.Buffer
				a := args(target)
				r = result{code: run(ctx, a, &out, &errb), out: out.String(), err: errb.String(), args: a}
				cancel(nil)
				if r.code != c.code {
					t.Fatalf("want exit %d, got %v", c.code, r)
				}
			} else {
				r = mustFail(t, c.code, nil, args(target)...)
			}
			for _, w := range c.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("the stop does not say %q: %v", w, r)
				}
			}
			if c.interrupt && (strings.Contains(r.err, "once the cause is fixed") || strings.HasSuffix(strings.TrimSpace(r.err), ": interrupted")) {
				t.Errorf("an interruption has no cause to fix: %v", r)
			}
			noFile(t, target)
			if _, err := os.Stat(filetarget.PartialPath(target)); err != nil {
				t.Fatalf("partial output not kept: %v", err)
			}
			done := keepJournal(t, target)
			if len(done) == 0 || done[last] {
				t.Fatalf("journal after the stop: %d chunks (last one: %v)", len(done), done[last])
			}
			var from int
			if c.keepRule {
				from = keepWatch(p, done, c.rule)
			} else {
				from = keepWatch(p, done)
			}
			rr := pbs(t, append(args(target, "--resume", "--output-format", "json"), c.resume...)...)
			if rr.code != c.resCode {
				t.Fatalf("resume: want exit %d, got %v", c.resCode, rr)
			}
			keepRefetched(t, p, from)
			fixture.Equal(t, target, c.result)
		})
	}
}

// TestRerunOverPartialRefused: a restore without --resume to a target whose
// interrupted restore left durable chunks is refused (exit 2) naming
// --resume and --restart, and leaves the partial output and journal alone;
// --restart starts over; --resume with --restart is a usage error.
func TestRerunOverPartialRefused(t *testing.T) {
	fixture.SkipIfShort(t)
	data, last, p, args := keepSetup(t)
	target := filepath.Join(t.TempDir(), "disk.img")
	p.SetRules(faultproxy.Rule{Method: "GET", PathContains: chunkstore.ChunkRelPath(last), Status: 500})
	mustFail(t, 3, []string{"--resume"}, args(target)...)
	done := keepJournal(t, target)
	p.SetRules()
	mustFail(t, 2, []string{"--resume", "--restart", "durable chunks"}, args(target)...)
	if n := len(keepJournal(t, target)); n != len(done) {
		t.Fatalf("the refused run changed the journal: %d chunks, had %d", n, len(done))
	}
	if st, err := os.Stat(filetarget.PartialPath(target)); err != nil || st.Size() != int64(len(data)) {
		t.Fatalf("the refused run changed the partial output: %v", err)
	}
	mustFail(t, 2, []string{"--restart"}, args(target, "--resume", "--restart")...)
	r := mustOK(t, args(target, "--restart")...)
	if !strings.Contains(r.err, "discarded") {
		t.Errorf("--restart does not say what it discards: %v", r)
	}
	fixture.Equal(t, target, data)
}

// TestResumeNothingAndComplete: --resume with nothing to resume starts the
// restore and says so; --resume after it completed says the target is
// complete (exit 0) and fetches no chunk; once the file changed it no
// longer claims so. A run without --resume leaves nothing beside the
// target.
func TestResumeNothingAndComplete(t *testing.T) {
	fixture.SkipIfShort(t)
	data, _, p, args := keepSetup(t)
	plain := filepath.Join(t.TempDir(), "plain.img")
	mustOK(t, args(plain)...)
	if ents, _ := os.ReadDir(filepath.Dir(plain)); len(ents) != 1 {
		t.Errorf("a restore without --resume left beside the target: %v", ents)
	}
	// No record of it: --resume reads it back and finds it whole.
	p.SetRules(faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"})
	if r := mustOK(t, args(plain, "--resume")...); !strings.Contains(r.out, "whole, checked 16 chunks: nothing to do") {
		t.Errorf("--resume after a restore without it does not say the target is complete: %v", r)
	}
	if n := p.Matched()[0]; n != 0 {
		t.Errorf("--resume over a whole file fetched %d chunks", n)
	}
	p.SetRules()
	target := filepath.Join(t.TempDir(), "disk.img")
	r := mustOK(t, args(target, "--resume")...)
	if !strings.Contains(r.err, "nothing to resume") {
		t.Errorf("--resume with nothing to resume does not say so: %v", r)
	}
	fixture.Equal(t, target, data)
	p.SetRules(faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"})
	r = mustOK(t, args(target, "--resume")...)
	if !strings.Contains(r.out, "is complete") {
		t.Errorf("--resume after completion does not say the target is complete: %v", r)
	}
	if n := p.Matched()[0]; n != 0 {
		t.Errorf("--resume of a complete target fetched %d chunks", n)
	}
	fixture.Equal(t, target, data)
	// Touched since: the record no longer vouches for it, its bytes do.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(target, later, later); err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, args(target, "--resume")...)
	if !strings.Contains(r.out, "whole, checked") || !strings.Contains(r.err, "changed since") {
		t.Errorf("--resume over a touched but whole file: %v", r)
	}
	// Changed since: no claim of completeness, and nothing written.
	keepFlip(t, target, 3*keepChunk+5)
	mustFail(t, 2, []string{"1 of 16 chunks differ", "--force"}, args(target, "--resume")...)
	if n := p.Matched()[0]; n != 0 {
		t.Errorf("--resume of a complete target fetched %d chunks", n)
	}
}

// keepFlip inverts the byte at off of the file at path, in place.
func keepFlip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestResumeOverPlainRestore: --resume over a file a restore without
// --resume completed (no journal, no completion record) reads it back
// against the index — with the key for an encrypted archive — and, the
// file whole, says so and exits 0 fetching nothing (the store's chunks are
// gone) and writing nothing (content and modification time unchanged, no
// journal left); one byte changed in a data chunk, or data in a zero range,
// and --resume is refused (exit 2) naming how many chunks differ and
// --force, the file left as it is.
func TestResumeOverPlainRestore(t *testing.T) {
	data := fixture.Build(25, fixture.Region{Kind: fixture.Random, Len: 6 * keepChunk},
		fixture.Region{Kind: fixture.Zero, Len: 3 * keepChunk}, fixture.Region{Kind: fixture.Random, Len: 2 * keepChunk})
	for _, c := range []struct {
		name string
		key  bool
	}{{"plain", false}, {"encrypted", true}} {
		t.Run(c.name, func(t *testing.T) {
			store := fixture.NewStore(t)
			var keyArgs []string
			if c.key {
				keyfile := filepath.Join(t.TempDir(), "key.json")
				mustOK(t, "key", "create", "--kdf", "none", keyfile)
				keyArgs = []string{"--keyfile", keyfile}
			}
			backupImage(t, store, data, append([]string{"--chunk-size", "64"}, keyArgs...)...)
			dir := t.TempDir()
			target := filepath.Join(dir, "disk.img")
			args := func(extra ...string) []string {
				return append(append(append([]string{"restore", "--store", store}, keyArgs...), extra...), snap0, "drive-scsi0", target)
			}
			mustOK(t, args()...)
			// From here on, a fetch fails: nothing is to be fetched.
			if err := os.Rename(filepath.Join(store, ".chunks"), filepath.Join(store, ".chunks-gone")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(store, ".chunks"), 0o755); err != nil {
				t.Fatal(err)
			}
			past := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
			unchanged := func(want []byte) {
				t.Helper()
				fixture.Equal(t, target, want)
				if st, err := os.Stat(target); err != nil || !st.ModTime().Equal(past) {
					t.Errorf("the target's modification time changed: %v (want %v)", st.ModTime(), past)
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 1 {
					t.Errorf("--resume left beside the target: %v", ents)
				}
			}
			touch := func() {
				t.Helper()
				if err := os.Chtimes(target, past, past); err != nil {
					t.Fatal(err)
				}
			}
			touch()
			r := mustOK(t, args("--resume")...)
			if want := "holds " + snap0 + " drive-scsi0.img.fidx whole, checked 8 chunks: nothing to do"; !strings.Contains(r.out, want) {
				t.Errorf("--resume over a whole file does not say %q: %v", want, r)
			}
			unchanged(data)
			s := restoreJSON(t, args("--resume")[1:]...)
			if s.ChunksFetched != 0 || s.ResumedChunks == 0 || s.ExitCode != 0 {
				t.Errorf("--resume over a whole file, JSON: %+v", s)
			}
			unchanged(data)

			for _, m := range []struct {
				name string
				off  int64
				want []string
			}{
				{"data", 4*keepChunk + 100, []string{"1 of 8 chunks differ", "--force"}},
				{"zero", 7*keepChunk + 9, []string{"zero ranges do not read as zeros", "--force"}},
			} {
				t.Run(m.name, func(t *testing.T) {
					keepFlip(t, target, m.off)
					touch()
					changed, err := os.ReadFile(target)
					if err != nil {
						t.Fatal(err)
					}
					r := mustFail(t, 2, m.want, args("--resume")...)
					if strings.Contains(r.out, "nothing to do") {
						t.Errorf("--resume over a changed file claims it complete: %v", r)
					}
					unchanged(changed)
					keepFlip(t, target, m.off)
					touch()
				})
			}
		})
	}
}

// TestDeviceJournalWithoutHome: a restore to a block device needs no
// writable HOME (read-only, or none at all): its journal goes to the next
// writable place of filetarget.JournalDirs. A --resume after a completed
// --resume run reads the device back and fetches nothing.
func TestDeviceJournalWithoutHome(t *testing.T) {
	fixture.SkipIfShort(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: loop devices and a read-only tmpfs")
	}
	data := fixture.Build(24, fixture.Region{Kind: fixture.Random, Len: 8 * keepChunk}, fixture.Region{Kind: fixture.Zero, Len: 2 * keepChunk})
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "64")
	rohome := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", rohome).CombinedOutput(); err != nil {
		fixture.SkipOrFail(t, "mount a read-only tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", rohome).Run() })
	for _, c := range []struct {
		name string
		home string // "": unset
	}{{"read-only HOME", rohome}, {"no HOME", ""}} {
		t.Run(c.name, func(t *testing.T) {
			dev, _ := fixture.LoopDevice(t, int64(len(data)), []byte{0x5a})
			t.Setenv("XDG_CACHE_HOME", "")
			os.Unsetenv("XDG_CACHE_HOME")
			t.Setenv("HOME", c.home)
			if c.home == "" {
				os.Unsetenv("HOME")
			}
			t.Cleanup(func() {
				if j, err := filetarget.JournalPath(dev); err == nil {
					restore.RemoveJournal(j)
				}
			})
			mustOK(t, "restore", "--store", store, snap0, "drive-scsi0", dev)
			fixture.Equal(t, dev, data)
			// As a retry loop runs it: --resume from the start.
			mustOK(t, "restore", "--resume", "--store", store, snap0, "drive-scsi0", dev)
			s := restoreJSON(t, "--resume", "--store", store, snap0, "drive-scsi0", dev)
			if s.ChunksFetched != 0 || s.ResumedChunks != 8 {
				t.Errorf("--resume after completion: %d fetched, %d resumed; want 0 and 8", s.ChunksFetched, s.ResumedChunks)
			}
			fixture.Equal(t, dev, data)
		})
	}
}

// TestRetryProgressLines: while bucket requests are retried, --progress
// lines says what is retried, why and until when, every interval: when the
// endpoint answers 500 to everything (before any progress line could
// start) and when one chunk keeps failing during the data transfer.
func TestRetryProgressLines(t *testing.T) {
	fixture.SkipIfShort(t)
	_, last, p, args := keepSetup(t)
	for _, c := range []struct {
		name string
		rule faultproxy.Rule
		want string
	}{
		{"everything-500", faultproxy.Rule{Status: 500}, "restore: retrying "},
		{"chunk-500", faultproxy.Rule{Method: "GET", PathContains: chunkstore.ChunkRelPath(last), Status: 500}, "restore: retrying GET chunk " + last.String()[:12]},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.SetRules(c.rule)
			target := filepath.Join(t.TempDir(), "disk.img")
			r := mustFail(t, 3, nil, args(target, "--retry-for", "2s", "--progress", "lines", "--progress-interval", "200ms")...)
			var notes int
			for _, l := range strings.Split(r.err, "\n") {
				if strings.HasPrefix(l, c.want) && strings.Contains(l, "(500 Internal Server Error) until ") {
					if notes == 0 {
						t.Log(l)
					}
					notes++
				}
			}
			// About 2s of retries at 200ms: several lines, whatever the load.
			if notes < 2 {
				t.Errorf("%d lines %q… (500 Internal Server Error) until …, want several: %v", notes, c.want, r)
			}
		})
	}
}
