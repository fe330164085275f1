package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/bootcheck"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/restore"
)

// failingReader fails every read at or past off with err.
type failingReader struct {
	off int64
	err error
}

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.off {
		return 0, f.err
	}
	return len(p), nil
}

// TestReadWatch: the export's first failed read cancels the boot with
// that error (kept as its cause, so a store outage stays exit 3 and a
// damaged chunk exit 1); reads that succeed, a read after the boot ended,
// and a short read at the end do not.
func TestReadWatch(t *testing.T) {
	outage := fmt.Errorf("chunk 0123: %w", chunkstore.ErrUnavailable)
	ctx, fail := context.WithCancelCause(context.Background())
	w := &readWatch{ReaderAt: failingReader{off: 4096, err: outage}, name: "drive-scsi0.img.fidx", ctx: ctx, fail: fail}
	buf := make([]byte, 512)
	if _, err := w.ReadAt(buf, 0); err != nil || ctx.Err() != nil {
		t.Fatalf("good read: %v, ctx %v", err, ctx.Err())
	}
	if _, err := w.ReadAt(buf, 8192); !errors.Is(err, outage) {
		t.Fatalf("bad read: %v", err)
	}
	cause := context.Cause(ctx)
	if !errors.Is(cause, chunkstore.ErrUnavailable) || exitCode(cause) != exitOutside ||
		!strings.Contains(cause.Error(), "drive-scsi0.img.fidx at offset 8192") {
		t.Fatalf("cause %v (exit %d)", cause, exitCode(cause))
	}
	// Later errors keep the first.
	w.ReaderAt = failingReader{err: errors.New("other")}
	w.ReadAt(buf, 0)
	if context.Cause(ctx) != cause {
		t.Fatalf("cause changed to %v", context.Cause(ctx))
	}
	// EOF with a full read is no failure.
	ctx2, fail2 := context.WithCancelCause(context.Background())
	defer fail2(nil)
	w2 := &readWatch{ReaderAt: eofReader{}, name: "x", ctx: ctx2, fail: fail2}
	if _, err := w2.ReadAt(buf, 0); !errors.Is(err, io.EOF) || ctx2.Err() != nil {
		t.Fatalf("EOF read: %v, ctx %v", err, ctx2.Err())
	}
}

type eofReader struct{}

func (eofReader) ReadAt(p []byte, off int64) (int, error) { return len(p), io.EOF }

// TestPrintBootHeading: "did not boot" heads only a guest that had its
// chance; a check that could not run, an interrupt and a damaged disk
// say so; an accelerator never chosen leaves no blank.
func TestPrintBootHeading(t *testing.T) {
	ran := &bootcheck.Report{Firmware: "seabios", MachineType: "pc", MemoryMiB: 256, Cores: 1, Accelerator: "tcg", Reason: "timeout after 20s"}
	never := &bootcheck.Report{Firmware: "seabios", MachineType: "pc", MemoryMiB: 256, Cores: 1, Reason: "x"}
	for _, c := range []struct {
		name string
		r    *bootcheck.Report
		err  error
		want string
		not  string
	}{
		{"booted", &bootcheck.Report{OK: true, Accelerator: "kvm"}, nil, ": booted\n", "did not boot"},
		{"did not boot", ran, fmt.Errorf("%w: timeout after 20s", bootcheck.ErrDidNotBoot), ": did not boot\n", ""},
		{"no QEMU", never, fmt.Errorf("%w: install qemu-system-x86", bootcheck.ErrNoQEMU), ": could not run\n", "did not boot"},
		{"unwritable output", never, fmt.Errorf("boot check: %w: permission denied", outfile.ErrWrite), ": could not run\n", "did not boot"},
		{"SIGTERM", ran, &cli.InterruptedError{Sig: syscall.SIGTERM}, ": interrupted\n", "did not boot"},
		{"canceled", ran, context.Canceled, ": interrupted\n", "did not boot"},
		{"store down", ran, fmt.Errorf("read: %w", chunkstore.ErrUnavailable), ": could not run\n", "did not boot"},
		{"damaged", ran, &restore.DamagedError{}, ": stopped: the disk's data is damaged or missing\n", "did not boot"},
	} {
		var b strings.Builder
		printBoot(&b, "vm/100", c.r, c.err)
		out := b.String()
		if !strings.Contains(out, c.want) || c.not != "" && strings.Contains(out, c.not) || strings.Contains(out, "core(s), ;") || strings.Contains(out, "core(s), \n") {
			t.Errorf("%s: %q", c.name, out)
		}
	}
}

// TestPrintBootReasonOnce: a check whose error is its reason (a failed
// read of the export, an interrupt) leaves the reason to stderr (run
// prints the error); another reason is printed.
func TestPrintBootReasonOnce(t *testing.T) {
	r := &bootcheck.Report{Firmware: "seabios", MachineType: "pc", Reason: "boot check: the NBD export failed to read x at offset 0: store unavailable"}
	var b strings.Builder
	printBoot(&b, "vm/100", r, errors.New(r.Reason))
	if strings.Contains(b.String(), "store unavailable") {
		t.Errorf("reason said again:\n%s", b.String())
	}
	b.Reset()
	printBoot(&b, "vm/100", r, fmt.Errorf("%w: %s (console log: c)", bootcheck.ErrDidNotBoot, r.Reason))
	if !strings.Contains(b.String(), "  "+r.Reason+"\n") {
		t.Errorf("reason missing:\n%s", b.String())
	}
}

// TestReserveBootOutput: each run gets console log and screenshot names
// of its own; an unwritable directory is exit 3.
func TestReserveBootOutput(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		con, shot, err := reserveBootOutput(dir, "boot-vm-100")
		if err != nil || seen[con] || seen[shot] || strings.TrimSuffix(con, "-console.log") != strings.TrimSuffix(shot, "-screen.png") {
			t.Fatalf("run %d: %q %q %v", i, con, shot, err)
		}
		seen[con], seen[shot] = true, true
	}
	if !seen[filepath.Join(dir, "boot-vm-100-console.log")] {
		t.Errorf("first run's name: %v", seen)
	}
	_, _, err := reserveBootOutput(filepath.Join(dir, "boot-vm-100-console.log"), "x")
	if exitCode(err) != exitOutside {
		t.Errorf("not a directory: %v (exit %d)", err, exitCode(err))
	}
}

// TestDrillTableBootColumn: a fleet drill with boots has a boot column
// (up, did not boot, not booted); without boots the table is as before.
func TestDrillTableBootColumn(t *testing.T) {
	up := drill.Report{Snapshot: "vm/100/2026-11-29T10:00:00Z", Archive: "drive-scsi0.img.fidx", OK: true, Boot: &bootcheck.Report{OK: true, SecondsToBoot: 12.34}}
	down := drill.Report{Snapshot: "vm/101/2026-11-29T10:00:00Z", Archive: "drive-scsi0.img.fidx", Error: "x", Boot: &bootcheck.Report{Reason: "did not boot: timeout after 20s"}}
	data := drill.Report{Snapshot: "vm/101/2026-11-29T10:00:00Z", Archive: "drive-scsi1.img.fidx", OK: true}
	var b strings.Builder
	printDrillTable(&b, []drill.Report{up, down, data}, false)
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 5 || !strings.HasSuffix(strings.TrimSpace(lines[1]), "boot") || !strings.HasSuffix(lines[2], "up 12.3s") ||
		!strings.HasSuffix(lines[3], "did not boot") || !strings.HasSuffix(lines[4], " -") {
		t.Fatalf("table:\n%s", b.String())
	}
	b.Reset()
	printDrillTable(&b, []drill.Report{data}, false)
	if strings.Contains(b.String(), "boot") {
		t.Fatalf("a table without boots has a boot column:\n%s", b.String())
	}
}

// TestScratchTakenError: a fleet drill's copy refused because its name is
// taken is a usage error (exit 2) naming the file, with no --force advice
// (a fleet drill takes no --force).
func TestScratchTakenError(t *testing.T) {
	err := error(&scratchTakenError{fmt.Errorf("/scr/000-vm_100-drive-scsi0.img: %w", restore.ErrTargetExists)})
	if msg := err.Error(); strings.Contains(msg, "--force") || !strings.Contains(msg, "/scr/000-vm_100-drive-scsi0.img: target exists") || !strings.Contains(msg, "move it out of --scratch") {
		t.Errorf("message %q", msg)
	}
	if !errors.Is(err, restore.ErrTargetExists) || codeFor(context.Background(), err) != exitUsage {
		t.Errorf("%v: exit %d, want %d", err, codeFor(context.Background(), err), exitUsage)
	}
}
