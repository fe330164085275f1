package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// slowBucket backs data up (64 KiB chunks) and serves the datastore from an
// S3 server through a proxy adding 40 ms to every request, so that a
// restore with --jobs 1 takes a second or more. It returns the restore
// arguments for the store and a function counting the chunk downloads so
// far.
func slowBucket(t *testing.T, data []byte) (storeArgs []string, chunkGETs func() int) {
	t.Helper()
	local := fixture.NewStore(t)
	backupImage(t, local, data, "--chunk-size", "64")
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	p, err := faultproxy.Start("127.0.0.1:0", s3.Endpoint, 40*time.Millisecond,
		faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	bktSetEnv(t, "")
	return []string{"--store", "s3://bkt/ds", "--s3-endpoint", p.URL, "--jobs", "1", "--writers", "0"},
		func() int { return p.Matched()[0] }
}

// waitRestoring waits until the restore into dir has its partial output
// there and has fetched at least 2 chunks, and fails the test after 20 s.
func waitRestoring(t *testing.T, dir string, chunkGETs func() int, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		if len(entries) > 0 && chunkGETs() >= 2 {
			return
		}
		select {
		case <-done:
			t.Fatalf("the restore ended before it was under way")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restore did not get under way (%d entries in the target directory, %d chunk GETs)", len(entries), chunkGETs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signalAndWait sends sig to cmd, a started pbsdirect process whose done
// channel closes once cmd.Wait returned, and waits up to within for it to
// end; one still running then is killed and fails the test, with stderr.
func signalAndWait(t *testing.T, cmd *exec.Cmd, done <-chan struct{}, sig os.Signal, within time.Duration, stderr fmt.Stringer) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(within):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running %v after %v; stderr: %s", within, sig, stderr)
	}
}

// TestInterruptedRestore: SIGINT or SIGTERM in the middle of a restore
// (the real process, signalled) ends it with exit 130 or 143 and leaves
// nothing in the target directory: no target, no partial output.
func TestInterruptedRestore(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Mixed(4<<20, 21) // 64 chunks: several seconds at 40 ms each
	storeArgs, chunkGETs := slowBucket(t, data)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "disk.raw")
			args := append(append([]string{"restore"}, storeArgs...), snap0, "drive-scsi0", target)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), runAsCLI+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var werr error
			go func() { werr = cmd.Wait(); close(done) }()
			before := chunkGETs()
			waitRestoring(t, dir, func() int { return chunkGETs() - before }, done)
			signalAndWait(t, cmd, done, c.sig, 20*time.Second, &stderr)
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != c.code {
				t.Errorf("after %v: %v, want exit %d; stderr: %s", c.sig, werr, c.code, stderr.String())
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("after %v the target directory holds %v", c.sig, left)
			}
		})
	}
}

// TestTargetAppearsDuringRestore: a file another program creates at the
// target name while the restore runs is never replaced: the restore fails,
// the file keeps its bytes, and no partial output is left.
func TestTargetAppearsDuringRestore(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Mixed(4<<20, 22)
	storeArgs, chunkGETs := slowBucket(t, data)
	dir := t.TempDir()
	target := filepath.Join(dir, "disk.raw")
	done := make(chan struct{})
	var r result
	go func() {
		defer close(done)
		var out, errb bytes.Buffer
		args := append(append([]string{"restore"}, storeArgs...), snap0, "drive-scsi0", target)
		r = result{code: run(context.Background(), args, &out, &errb), out: out.String(), err: errb.String(), args: args}
	}()
	waitRestoring(t, dir, chunkGETs, done)
	theirs := []byte("written by another program while the restore ran\n")
	if err := os.WriteFile(target, theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("restore still running after 60 s")
	}
	if r.code == 0 {
		t.Errorf("the restore replaced or ignored a file that appeared at the target: %v", r)
	}
	fixture.Equal(t, target, theirs)
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("target directory holds %v, want only the other program's file", left)
	}
	t.Logf("failed as wanted: %v", r)
}

// TestRestoreStdoutClosed: `restore … - | head -c 1` (the real process, its
// standard output a pipe closed after one byte) exits 3 with a message
// saying the pipe was closed, not 141 (SIGPIPE) without a word.
func TestRestoreStdoutClosed(t *testing.T) {
	data := fixture.Mixed(8<<20, 23)
	store := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "drive-scsi0.img:"+img)
	cmd := exec.Command(os.Args[0], "restore", "--store", store, snap0, "drive-scsi0", "-")
	cmd.Env = append(os.Environ(), runAsCLI+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	out.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), "broken pipe") || !strings.Contains(stderr.String(), "not written whole") {
		t.Errorf("restore to a pipe closed after 1 byte: %v, want exit 3; stderr: %s", err, stderr.String())
	}
}
