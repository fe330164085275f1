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
	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestExitCode: the one mapping from errors to exit codes, as an
// orchestrator reads them, for every class of error: damaged, missing,
// usage, outside, interrupted, unknown. Damage is proven, never assumed: an
// error of a kind not known to prove damage exits 3.
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
		{"key file not a regular file", fmt.Errorf("--keyfile: %w", crypto.ErrNotSecretFile), 2},
		{"key file KDF out of bounds", fmt.Errorf("key file: %w", crypto.ErrUnsupportedKDF), 2},
		{"no passphrase source", fmt.Errorf("key file k.json: %w", crypto.ErrPassphraseNeeded), 2},
		{"new passphrase too short", fmt.Errorf("key create: %w", crypto.ErrPassphraseTooShort), 2},
		{"file named not there", fmt.Errorf("key file: %w", usageOf(&fs.PathError{Op: "open", Path: "k.json", Err: syscall.ENOENT})), 2},
		{"store not there", fmt.Errorf("open: %w", &storeMissingError{fmt.Errorf("datastore /mnt/ds: %w", chunkstore.ErrNotFound)}), 3},
		{"snapshot not there", fmt.Errorf("vm/100: %w", chunkstore.ErrNotFound), 1},
		{"missing chunk", chunk(chunkstore.ErrNotFound), 1},
		{"damaged chunk", chunk(chunkstore.ErrDigestMismatch), 1},
		{"empty chunk", chunk(chunkstore.ErrEmpty), 1},
		{"damaged list", &restore.DamagedError{Archive: "a"}, 1},
		{"bad manifest signature", fmt.Errorf("vm/100: %w", index.ErrBadSignature), 1},
		{"malformed index", fmt.Errorf("drive-scsi0.img.fidx: %w: size 0", index.ErrBadIndex), 1},
		// A key not opened is no damage: retry with the right passphrase.
		{"wrong passphrase", fmt.Errorf("key.json: %w", crypto.ErrWrongPassphrase), 3},
		{"wrong passphrase, key file named", keys.NotOpened("key file k.json", crypto.ErrWrongPassphrase), 3},
		{"wrong passphrase behind a KeyError", &snapshot.KeyError{Status: snapshot.KeyUnopened, File: "k.json", Err: keys.NotOpened("key file k.json", crypto.ErrWrongPassphrase)}, 3},
		{"wrong master key passphrase", fmt.Errorf("master-private.pem: %w", crypto.ErrMasterKeyPassphrase), 3},
		{"key file fingerprint belied", keys.NotOpened("key file k.json", crypto.ErrKeyFingerprint), 3},
		{"no such snapshot", fmt.Errorf("%w: vm/100/2026-11-29T10:00:00Z", snapshot.ErrNoSnapshot), 1},
		{"verify found damage", &dataError{errors.New("verification failed: 1 of 1 snapshot(s) damaged")}, 1},
		{"missing chunk behind an unreachable store", chunk(errors.Join(chunkstore.ErrNotFound, fmt.Errorf("%w: second store", chunkstore.ErrUnavailable))), 3},
		{"damaged copy behind an unreachable store", chunk(errors.Join(chunkstore.ErrCRC, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})), 3},
		{"unknown", errors.New("manifest signature does not verify"), 3},
		{"unknown chunk error", chunk(errors.New("operation error S3: GetObject, https response error StatusCode: 400, api error InvalidRequest")), 3},
		{"chunk path is a directory", chunk(&fs.PathError{Op: "read", Path: "/ds/.chunks/abcd/abcd", Err: syscall.EISDIR}), 3},
		{"local I/O error reading a chunk", chunk(&fs.PathError{Op: "read", Path: "/ds/.chunks/abcd/abcd", Err: syscall.EIO}), 3},
		{"expired credentials", chunk(fmt.Errorf("%w: api error ExpiredToken", chunkstore.ErrDenied)), 3},
		{"no journal directory", errors.New("journal for /dev/loop0: neither $XDG_CACHE_HOME nor $HOME are defined"), 3},
		{"merge refused", usageOf(errors.New("report 2: shard 0/3 given twice")), 2},
		{"store unavailable", chunk(fmt.Errorf("%w: 503 SlowDown past --retry-for", chunkstore.ErrUnavailable)), 3},
		{"credentials refused", fmt.Errorf("open: %w: 403", chunkstore.ErrDenied), 3},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, 3},
		{"no space", &fs.PathError{Op: "write", Path: "/t/x", Err: syscall.ENOSPC}, 3},
		{"output file where none can be", outfile.WriteError("/t/no/r.json", &fs.PathError{Op: "open", Path: "/t/no/.pbsdirect-1.tmp", Err: syscall.ENOENT}), 2},
		{"output file not written", outfile.WriteError("/t/r.json", &fs.PathError{Op: "write", Path: "/t/.pbsdirect-1.tmp", Err: syscall.EACCES}), 3},
		{"quota", &fs.PathError{Op: "write", Path: "/t/x", Err: syscall.EDQUOT}, 3},
		{"target I/O error", fmt.Errorf("restore: %w", &fs.PathError{Op: "pwrite", Path: "/dev/sdz", Err: syscall.EIO}), 3},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), 3},
		{"no FUSE", fmt.Errorf("mount: %w: /dev/fuse: no such file", fusefs.ErrUnavailable), 3},
		{"target busy", fmt.Errorf("/t/x: %w: another pbsdirect run (PID 7) is writing it", restore.ErrTargetBusy), 3},
		{"snapshot busy", fmt.Errorf("backup failed: %w", chunkstore.ErrSnapshotBusy), 3},
		{"SIGINT", &cli.InterruptedError{Sig: syscall.SIGINT}, 130},
		{"SIGTERM", &cli.InterruptedError{Sig: syscall.SIGTERM}, 143},
		{"canceled, no signal", context.Canceled, 3},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&cli.InterruptedError{Sig: syscall.SIGTERM})
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
	var sum restore.Summary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil || sum.ExitCode != 0 || !strings.Contains(r.out, `"exit-code":0`) {
		t.Errorf("restore summary: %v, %v", err, r)
	}
	damageOneChunk(t, store)
	r = mustFail(t, 1, nil, "verify", "--output-format", "json", "--store", store)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || rep.OK || rep.ExitCode != 1 {
		t.Errorf("verify report: %+v, %v: %v", rep, err, r)
	}
	if strings.Contains(r.out, "see above") || !strings.Contains(r.out, `(see \"snapshots\")`) {
		t.Errorf("the JSON error should point at the report's snapshots, not \"above\": %s", r.out)
	}
	r = mustFail(t, 1, nil, "verify", "--store", store)
	if !strings.Contains(r.out, "checked 1 snapshot(s), 1 failed") || strings.Contains(r.out, "verified 1 snapshot(s)") {
		t.Errorf("a failed verify's summary should say \"checked 1 snapshot(s), 1 failed\": %s", r.out)
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

// TestCommandExitCodes: usage mistakes found while running exit 2 (a key
// file that exists or is not there, a backup source path that is not
// there, a --backup-time not after the group's last snapshot), and a
// --store that is not there (no directory, a directory without a
// datastore as an unmounted disk leaves, a bucket that does not exist)
// exits 3, as README's exit-code table says.
func TestCommandExitCodes(t *testing.T) {
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "pw")
	dir := t.TempDir()
	keyfile := filepath.Join(dir, "k.json")
	mustOK(t, "key", "create", "--kdf", "none", keyfile)
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(3))
	img := fixture.WriteFile(t, dir, "d.raw", zeroMiddle(3))
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "present")
	bktSetEnv(t, "")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"key create onto a file", []string{"key", "create", "--kdf", "none", keyfile}, 2, "refusing to overwrite"},
		{"key show, no file", []string{"key", "show", filepath.Join(dir, "nosuch.json")}, 2, "no such file"},
		{"restore, key file not there", []string{"restore", "--store", store, "--keyfile", filepath.Join(dir, "nosuch.json"), snap0, "drive-scsi0", filepath.Join(dir, "o1.raw")}, 2, "nosuch.json"},
		{"verify, key file not there", []string{"verify", "--store", store, "--keyfile", filepath.Join(dir, "nosuch.json")}, 2, "nosuch.json"},
		{"backup source not there", []string{"backup", "--store", store, "drive-scsi0.img:" + filepath.Join(dir, "nosuch.raw")}, 2, "backup source drive-scsi0.img"},
		{"backup-time before the last", []string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", "2020-01-01T00:00:00Z", "drive-scsi0.img:" + img}, 2, "is not after the group's last snapshot " + snap0},
		{"store directory not there", []string{"verify", "--store", filepath.Join(dir, "nosuch")}, 3, "not found"},
		{"store directory empty (not mounted)", []string{"snapshots", "--store", t.TempDir()}, 3, "not a PBS datastore"},
		{"bucket not there", []string{"restore", "--store", "s3://nosuchbucket/ds", "--s3-endpoint", s3.Endpoint, snap0, "drive-scsi0", filepath.Join(dir, "o2.raw")}, 3, "nosuchbucket"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mustFail(t, c.code, []string{c.want}, c.args...)
		})
	}
}
