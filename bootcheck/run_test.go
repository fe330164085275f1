package bootcheck_test

import (
	"context"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/bootcheck"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/fixture/bootimage"
)

// needQEMU skips (fails under CI) without qemu-system-x86_64 and qemu-img.
func needQEMU(t *testing.T) {
	t.Helper()
	fixture.SkipIfShort(t)
	for _, p := range []string{"qemu-system-x86_64", "qemu-img"} {
		if _, err := exec.LookPath(p); err != nil {
			fixture.SkipOrFail(t, "%s not found (apt-get install qemu-system-x86 qemu-utils)", p)
		}
	}
}

func machine(t *testing.T, src string) bootcheck.Machine {
	t.Helper()
	m, err := bootcheck.NewMachine(bootcheck.Config{}, map[string]string{"scsi0": src}, bootcheck.Overrides{Cores: 2, MemoryMiB: 256})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunBoots boots the fixture image through an overlay and checks the
// report, the console log, the screenshot, and that the source and the
// private directory are left as they were.
func TestRunBoots(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.Build(t, dir)
	before, _ := os.ReadFile(im.Path)
	priv := t.TempDir()
	out := t.TempDir()
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: machine(t, im.Path), Timeout: 3 * time.Minute, Pattern: regexp.MustCompile(bootcheck.DefaultPattern),
		ConsoleLog: filepath.Join(out, "console.log"), Screenshot: filepath.Join(out, "screen.png"), Dir: priv,
	})
	if err != nil {
		t.Fatalf("Run: %v (report %+v)", err, rep)
	}
	if !rep.OK || len(rep.Passed) != 1 || rep.Passed[0] != bootcheck.CheckConsole || rep.SecondsToBoot <= 0 {
		t.Fatalf("report %+v", rep)
	}
	t.Logf("booted in %.1fs (%s)", rep.SecondsToBoot, rep.Accelerator)
	con, _ := os.ReadFile(rep.ConsoleLog)
	if !strings.Contains(string(con), bootimage.Marker) {
		t.Fatalf("console log lacks the marker:\n%s", con)
	}
	f, err := os.Open(rep.Screenshot)
	if err != nil {
		t.Fatalf("screenshot: %v (%s)", err, rep.ScreenshotError)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if after, _ := os.ReadFile(im.Path); string(after) != string(before) {
		t.Fatal("the source disk changed")
	}
	if left, _ := os.ReadDir(priv); len(left) != 0 {
		t.Fatalf("left in the private directory: %v", left)
	}
}

// TestRunDoesNotBoot: the image with its kernel zeroed stops at the
// bootloader; Run says "did not boot" and why, and keeps the console log.
func TestRunDoesNotBoot(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.Build(t, dir)
	zero := filepath.Join(dir, "zero.img")
	im.ZeroKernel(t, zero)
	out := t.TempDir()
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: machine(t, zero), Timeout: 3 * time.Minute, Pattern: regexp.MustCompile(bootcheck.DefaultPattern),
		ConsoleLog: filepath.Join(out, "console.log"),
	})
	if !errors.Is(err, bootcheck.ErrDidNotBoot) || rep.OK || rep.Reason == "" {
		t.Fatalf("Run: %v, report %+v", err, rep)
	}
	t.Logf("reason: %s", rep.Reason)
	if con, _ := os.ReadFile(rep.ConsoleLog); !strings.Contains(string(con), "SYSLINUX") {
		t.Fatalf("console log:\n%s", con)
	}
}

// TestRunTimeout: a pattern that never shows ends at the timeout, QEMU
// stopped.
func TestRunTimeout(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.Build(t, dir)
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: machine(t, im.Path), Timeout: 2 * time.Second, Pattern: regexp.MustCompile(`never shown`),
		ConsoleLog: filepath.Join(dir, "console.log"),
	})
	if !errors.Is(err, bootcheck.ErrDidNotBoot) || !strings.Contains(rep.Reason, "timeout") {
		t.Fatalf("Run: %v, report %+v", err, rep)
	}
}

// TestRunNoQEMU: without QEMU on PATH, ErrNoQEMU with the Debian package.
func TestRunNoQEMU(t *testing.T) {
	dir := t.TempDir()
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: machine(t, filepath.Join(dir, "x.img")), Timeout: time.Second, Pattern: regexp.MustCompile(`x`),
		ConsoleLog: filepath.Join(dir, "console.log"), LookPath: func(string) (string, error) { return "", exec.ErrNotFound },
	})
	if !errors.Is(err, bootcheck.ErrNoQEMU) || !strings.Contains(err.Error(), "qemu-system-x86") {
		t.Fatalf("Run: %v", err)
	}
	// No console log was written: the report names none.
	if rep.ConsoleLog != "" || rep.Accelerator != "" {
		t.Fatalf("report names %q, accelerator %q", rep.ConsoleLog, rep.Accelerator)
	}
	if err := bootcheck.CheckTools(func(string) (string, error) { return "", exec.ErrNotFound }, false, ""); !errors.Is(err, bootcheck.ErrNoQEMU) {
		t.Fatalf("CheckTools: %v", err)
	}
	if err := bootcheck.CheckTools(func(p string) (string, error) { return "/usr/bin/" + p, nil }, true, dir); !errors.Is(err, bootcheck.ErrNoQEMU) || !strings.Contains(err.Error(), "install ovmf") {
		t.Fatalf("CheckTools without OVMF: %v", err)
	}
}

// TestRunInterrupted: ctx ending while the guest boots stops QEMU (no
// process with the run's console log on its command line is left) and
// cleans the private directory.
func TestRunInterrupted(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.Build(t, dir)
	priv := t.TempDir()
	log := filepath.Join(dir, "interrupted-console.log")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	_, err := bootcheck.Run(ctx, bootcheck.Options{
		Machine: machine(t, im.Path), Timeout: 3 * time.Minute, Pattern: regexp.MustCompile(`never shown`),
		ConsoleLog: log, Dir: priv,
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), log) {
			t.Errorf("QEMU still runs: %s", p)
		}
	}
	if left, _ := os.ReadDir(priv); len(left) != 0 {
		t.Fatalf("left in the private directory: %v", left)
	}
}

// TestRunAgentPoweredOff: with the guest agent required, QEMU takes the
// virtio-serial port; the fixture has no agent and powers off, which
// fails the check at once ("powered off"), not at the timeout.
func TestRunAgentPoweredOff(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.Build(t, dir)
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: machine(t, im.Path), Timeout: 3 * time.Minute, Agent: true, ConsoleLog: filepath.Join(dir, "console.log"),
	})
	if !errors.Is(err, bootcheck.ErrDidNotBoot) || !strings.Contains(rep.Reason, "powered off") || !strings.Contains(rep.Reason, bootcheck.CheckAgent) {
		t.Fatalf("Run: %v, report %+v", err, rep)
	}
}

// TestRunOVMFNoBootableDevice: the fixture's disk has no EFI loader, so
// OVMF (q35) finds nothing to boot and starts its shell: a dead end, said
// at once.
func TestRunOVMFNoBootableDevice(t *testing.T) {
	needQEMU(t)
	if _, err := os.Stat("/usr/share/OVMF"); err != nil {
		fixture.SkipOrFail(t, "no OVMF (apt-get install ovmf)")
	}
	dir := t.TempDir()
	im := bootimage.Build(t, dir)
	m := machine(t, im.Path)
	m.Firmware, m.Type = "ovmf", "q35"
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: m, Timeout: 3 * time.Minute, Pattern: regexp.MustCompile(bootcheck.DefaultPattern), ConsoleLog: filepath.Join(dir, "console.log"),
	})
	if !errors.Is(err, bootcheck.ErrDidNotBoot) || !strings.Contains(rep.Reason, "no bootable device (OVMF") {
		t.Fatalf("Run: %v, report %+v", err, rep)
	}
	t.Logf("%s", rep.Reason)
}

// TestRunKernelPanic: a kernel that finds no init panics; the reason
// quotes the panic line, said at once.
func TestRunKernelPanic(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.BuildPanic(t, dir)
	rep, err := bootcheck.Run(context.Background(), bootcheck.Options{
		Machine: machine(t, im.Path), Timeout: 3 * time.Minute, Pattern: regexp.MustCompile(bootcheck.DefaultPattern), ConsoleLog: filepath.Join(dir, "console.log"),
	})
	if !errors.Is(err, bootcheck.ErrDidNotBoot) || !strings.Contains(rep.Reason, "kernel panic: Kernel panic - not syncing:") {
		t.Fatalf("Run: %v, report %+v", err, rep)
	}
	t.Logf("%s", rep.Reason)
}

// TestRunAgent: the guest agent answering passes --boot-agent alone, and
// with the console pattern both checks pass.
func TestRunAgent(t *testing.T) {
	needQEMU(t)
	dir := t.TempDir()
	im := bootimage.BuildAgent(t, dir)
	for _, withPattern := range []bool{false, true} {
		o := bootcheck.Options{Machine: machine(t, im.Path), Timeout: 2 * time.Minute, Agent: true, ConsoleLog: filepath.Join(dir, "console.log")}
		want := []string{bootcheck.CheckAgent}
		if withPattern {
			o.Pattern = regexp.MustCompile(bootcheck.DefaultPattern)
			want = []string{bootcheck.CheckConsole, bootcheck.CheckAgent}
		}
		rep, err := bootcheck.Run(context.Background(), o)
		if err != nil || !rep.OK || !slices.Equal(rep.Checks, want) || len(rep.Passed) != len(want) {
			con, _ := os.ReadFile(o.ConsoleLog)
			t.Fatalf("pattern %v: Run: %v, report %+v\nconsole:\n%s", withPattern, err, rep, con)
		}
	}
}
