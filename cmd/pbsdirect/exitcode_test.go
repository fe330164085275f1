package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestExitCode: the one mapping from errors to exit codes, as an
// orchestrator reads them.
func TestExitCode(t *testing.T) {
	chunk := func(err error) error {
		return fmt.Errorf("restore failed: %w", &restore.ChunkError{Length: 4, Offsets: []uint64{0}, Location: "x", Err: err})
	}
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"help", flag.ErrHelp, 0},
		{"usage", usagef("want SNAPSHOT"), 2},
		{"missing chunk", chunk(chunkstore.ErrNotFound), 1},
		{"damaged chunk", chunk(chunkstore.ErrDigestMismatch), 1},
		{"empty chunk", chunk(chunkstore.ErrEmpty), 1},
		{"damaged list", &restore.DamagedError{Archive: "a"}, 1},
		{"unknown", errors.New("manifest signature does not verify"), 1},
		{"store unavailable", chunk(fmt.Errorf("%w: 503 SlowDown past --retry-for", chunkstore.ErrUnavailable)), 3},
		{"credentials refused", fmt.Errorf("open: %w: 403", chunkstore.ErrDenied), 3},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, 3},
		{"no space", &fs.PathError{Op: "write", Path: "/t/x", Err: syscall.ENOSPC}, 3},
		{"quota", &fs.PathError{Op: "write", Path: "/t/x", Err: syscall.EDQUOT}, 3},
		{"target I/O error", fmt.Errorf("restore: %w", &fs.PathError{Op: "pwrite", Path: "/dev/sdz", Err: syscall.EIO}), 3},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), 3},
		{"no FUSE", fmt.Errorf("mount: %w: /dev/fuse: no such file", fusefs.ErrUnavailable), 3},
		{"target busy", fmt.Errorf("/t/x: %w: another pbsdirect run (PID 7) is writing it", restore.ErrTargetBusy), 3},
		{"snapshot busy", fmt.Errorf("backup failed: %w", chunkstore.ErrSnapshotBusy), 3},
		{"SIGINT", &interruptedError{sig: syscall.SIGINT}, 130},
		{"SIGTERM", &interruptedError{sig: syscall.SIGTERM}, 143},
		{"canceled, no signal", context.Canceled, 1},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interruptedError{sig: syscall.SIGTERM})
	if err := interrupted(ctx, context.Canceled); err.Error() != "interrupted (SIGTERM)" || codeFor(ctx, context.Canceled) != 143 {
		t.Errorf("interrupted run: %v, code %d; want \"interrupted (SIGTERM)\", 143", err, codeFor(ctx, context.Canceled))
	}
}

// TestSignalExit: a restore interrupted by SIGINT or SIGTERM exits 130 or
// 143 and says "interrupted", not "context canceled". The restore reads
// from a bucket address that accepts connections and never answers, so it
// is certainly still running when the signal comes.
func TestSignalExit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pbsdirect")
	if out, err := exec.Command("go", "build", "-tags", "disable_grpc_modules", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(bin, "restore", "--store", "s3://b/p", "--s3-endpoint", "http://"+ln.Addr().String(), snap0, "drive-scsi0", filepath.Join(t.TempDir(), "out.img"))
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		cmd.Process.Signal(c.sig)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(stderr.String(), "interrupted") || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("%v: %v, stderr %q; want exit %d and \"interrupted\"", c.sig, err, stderr.String(), c.code)
		}
	}
}

// TestJSONExitCode: JSON reports carry the exit code: a restore from a
// bucket endpoint that refuses connections exits 3 and says so on stdout as
// JSON; a restore and a verify that succeed say 0; a verify finding damage
// says 1.
func TestJSONExitCode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // now refuses
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	r := mustFail(t, 3, []string{"store unavailable"}, "restore", "--output-format", "json", "--store", "s3://b/p", "--s3-endpoint", "http://"+addr, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "x.img"))
	var fail struct {
		OK       bool   `json:"ok"`
		Error    string `json:"error"`
		ExitCode int    `json:"exit-code"`
	}
	if err := json.Unmarshal([]byte(r.out), &fail); err != nil || fail.OK || fail.ExitCode != 3 || fail.Error == "" {
		t.Errorf("JSON failure report: %+v (%v), want ok false, exit-code 3: %v", fail, err, r)
	}

	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(3))
	r = mustOK(t, "restore", "--output-format", "json", "--store", store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "ok.img"))
	var sum restoreSummary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil || sum.ExitCode != 0 || !strings.Contains(r.out, `"exit-code":0`) {
		t.Errorf("restore summary: %v, %v", err, r)
	}
	damageOneChunk(t, store)
	r = mustFail(t, 1, nil, "verify", "--output-format", "json", "--store", store)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || rep.OK || rep.ExitCode != 1 {
		t.Errorf("verify report: %+v, %v: %v", rep, err, r)
	}
}

// damageOneChunk flips a byte in the middle of the largest chunk file of store.
func damageOneChunk(t *testing.T, store string) {
	t.Helper()
	var biggest string
	var size int64
	filepath.WalkDir(filepath.Join(store, ".chunks"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if st, _ := d.Info(); st != nil && st.Size() > size {
				biggest, size = p, st.Size()
			}
		}
		return nil
	})
	data, err := os.ReadFile(biggest)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(biggest, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
