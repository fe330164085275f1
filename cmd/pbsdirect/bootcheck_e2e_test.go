package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/bootcheck"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/fixture/bootimage"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// bootConf is the guest configuration backed up with the boot image: the
// boot check reads its memory, cores and disk bus.
const bootConf = "boot: order=scsi0;net0\ncores: 2\nmemory: 256\nscsihw: virtio-scsi-single\nscsi0: local-lvm:vm-100-disk-0,size=26M\nide2: none,media=cdrom\nnet0: virtio=BC:24:11:00:00:01,bridge=vmbr0\n\n[before-upgrade]\nmemory: 64\n"

// needBootTools skips (fails under CI) without QEMU.
func needBootTools(t *testing.T) {
	t.Helper()
	fixture.SkipIfShort(t)
	for _, p := range []string{"qemu-system-x86_64", "qemu-img"} {
		if _, err := exec.LookPath(p); err != nil {
			fixture.SkipOrFail(t, "%s not found (apt-get install qemu-system-x86 qemu-utils)", p)
		}
	}
}

// bootJSON is drill's and boot-check's JSON result, the parts a boot
// check fills.
type bootJSON struct {
	OK       bool              `json:"ok"`
	ExitCode int               `json:"exit-code"`
	Error    string            `json:"error"`
	Boot     *bootcheck.Report `json:"boot"`
}

// noBootLeftovers fails when a boot check left a private directory (its
// overlays, NBD socket) in tmp.
func noBootLeftovers(t *testing.T, tmp string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(tmp, "pbsdirect-boot-*"))
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// checkBooted checks the report of a boot that passed: the console log
// has the fixture's marker, the screenshot exists.
func checkBooted(t *testing.T, r result) {
	t.Helper()
	var got bootJSON
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.Boot == nil {
		t.Fatalf("JSON: %v\n%v", err, r)
	}
	b := got.Boot
	if !got.OK || !b.OK || len(b.Passed) != 1 || b.Passed[0] != bootcheck.CheckConsole || b.SecondsToBoot <= 0 {
		t.Fatalf("boot report %+v\n%v", b, r)
	}
	if b.MemoryMiB != 256 || b.Cores != 2 || len(b.Disks) != 1 || b.Disks[0].Bus != "scsi" {
		t.Errorf("machine not as qemu-server.conf says: %+v", b)
	}
	if con, err := os.ReadFile(b.ConsoleLog); err != nil || !strings.Contains(string(con), bootimage.Marker) {
		t.Errorf("console log %s: %v\n%s", b.ConsoleLog, err, con)
	}
	if st, err := os.Stat(b.Screenshot); err != nil || st.Size() == 0 {
		t.Errorf("screenshot %q: %v (%s)", b.Screenshot, err, b.ScreenshotError)
	}
}

// checkDidNotBoot checks the report of a boot that failed: exit 1, "did
// not boot" with its reason, the console log kept.
func checkDidNotBoot(t *testing.T, r result) {
	t.Helper()
	if r.code != 1 {
		t.Fatalf("want exit 1: %v", r)
	}
	var got bootJSON
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.Boot == nil {
		t.Fatalf("JSON: %v\n%v", err, r)
	}
	if got.OK || got.Boot.OK || !strings.Contains(got.Error, "did not boot") || got.Boot.Reason == "" || !strings.Contains(got.Error, got.Boot.ConsoleLog) {
		t.Fatalf("report %+v, error %q", got.Boot, got.Error)
	}
	if con, err := os.ReadFile(got.Boot.ConsoleLog); err != nil || !strings.Contains(string(con), "SYSLINUX") {
		t.Errorf("console log %s: %v\n%s", got.Boot.ConsoleLog, err, con)
	}
}

// TestBootCheckE2E backs up a bootable disk (and its qemu-server.conf)
// into a directory store and the S3 test server and proves that it boots
// with drill --boot (after a restore) and boot-check (straight from the
// NBD export); the same disk with its kernel zeroed backs up and verifies
// but does not boot (exit 1, "did not boot", console log); without QEMU
// on PATH the check is exit 3; no overlay or NBD socket stays behind.
func TestBootCheckE2E(t *testing.T) {
	needBootTools(t)
	work := t.TempDir()
	im := bootimage.Build(t, work)
	zero := filepath.Join(work, "zero.img")
	im.ZeroKernel(t, zero)
	conf := fixture.WriteFile(t, work, "qemu-server.conf", []byte(bootConf))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the boot checks' private directories go here

	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "")
	stores := []struct {
		name  string
		flags []string
	}{
		{"dir", []string{"--store", fixture.NewStore(t)}},
		{"s3", []string{"--store", "s3://bkt/store", "--s3-endpoint", s3.Endpoint}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			for id, disk := range map[string]string{"100": im.Path, "101": zero} {
				mustOK(t, append(append([]string{"backup"}, st.flags...), "--backup-type", "vm", "--backup-id", id, "--backup-time", t0str,
					"drive-scsi0.img:"+disk, "qemu-server.conf:"+conf)...)
			}
			out := t.TempDir()
			boot := []string{"--boot-timeout", "3m", "--boot-output", out, "--output-format", "json"}

			// drill --boot: restore, read back, boot the restored disk.
			target := filepath.Join(t.TempDir(), "drill.raw")
			r := mustOK(t, append(append(append([]string{"drill", "--boot"}, st.flags...), boot...), "vm/100", "drive-scsi0", target, "--remove")...)
			checkBooted(t, r)
			var rep drill.Report
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil || !rep.OK || rep.ReadBack == nil || !rep.Removed {
				t.Errorf("drill report %+v: %v", rep, err)
			}
			noFile(t, target)
			noBootLeftovers(t, tmp)

			// boot-check: no restore, the NBD export under an overlay. The
			// private directory of a run killed with SIGKILL (its lock
			// free) is removed first, with a note.
			stale := filepath.Join(tmp, "pbsdirect-boot-stale")
			if err := os.Mkdir(stale, 0o700); err != nil {
				t.Fatal(err)
			}
			fixture.WriteFile(t, stale, "owner.lock", []byte("1\n"))
			r = mustOK(t, append(append([]string{"boot-check"}, st.flags...), append(boot, "vm/100")...)...)
			checkBooted(t, r)
			if !strings.Contains(r.err, "note: removed 1 boot check director") {
				t.Errorf("no note of the stale directory removed: %v", r)
			}
			noBootLeftovers(t, tmp)

			// The zeroed kernel: the backup verifies, the guest does not boot.
			mustOK(t, append(append([]string{"verify"}, st.flags...), "vm/101")...)
			target = filepath.Join(t.TempDir(), "zero.raw")
			checkDidNotBoot(t, pbs(t, append(append(append([]string{"drill", "--boot"}, st.flags...), boot...), "vm/101", "drive-scsi0", target, "--remove")...))
			checkDidNotBoot(t, pbs(t, append(append([]string{"boot-check"}, st.flags...), append(boot, "vm/101")...)...))
			noBootLeftovers(t, tmp)

			// A fleet drill boots each snapshot's boot disk: vm/100 up,
			// vm/101 not (exit 1). Each copy is removed whatever its
			// result; the failed boot's console log and screenshot stay
			// in --scratch, named by group and archive (the passed one's
			// are removed), and the next night's run replaces them: it
			// fails as the first did, not on the first's leftovers. The
			// metrics tell the boot from the data.
			if st.name == "dir" {
				scratch, prom := t.TempDir(), filepath.Join(t.TempDir(), "drill.prom")
				for run := range 2 {
					r := pbs(t, append(append(append([]string{"drill", "--boot", "--scratch", scratch, "--metrics-textfile", prom}, st.flags...), boot[:2]...), "--output-format", "json")...)
					if r.code != 1 {
						t.Fatalf("fleet drill %d: want exit 1: %v", run, r)
					}
					var fleet drill.FleetReport
					if err := json.Unmarshal([]byte(r.out), &fleet); err != nil {
						t.Fatalf("fleet drill JSON: %v\n%v", err, r)
					}
					booted := map[string]bool{}
					for _, rep := range fleet.Drills {
						if rep.Boot != nil {
							booted[strings.SplitN(rep.Snapshot, "/", 3)[1]] = rep.Boot.OK
						}
						if !rep.Removed {
							t.Errorf("copy of %s not removed: %+v", rep.Snapshot, rep)
						}
					}
					if len(booted) != 2 || !booted["100"] || booted["101"] {
						t.Errorf("fleet drill %d boots: %v\n%v", run, booted, r)
					}
					var left []string
					entries, _ := os.ReadDir(scratch)
					for _, e := range entries {
						left = append(left, e.Name())
					}
					if fmt.Sprint(left) != "[boot-vm_101-drive-scsi0.img-console.log boot-vm_101-drive-scsi0.img-screen.png]" {
						t.Errorf("fleet drill %d left in --scratch: %v", run, left)
					}
					noBootLeftovers(t, tmp)
				}
				prev, err := os.ReadFile(prom)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{`pbsdirect_drill_boot_success{archive="drive-scsi0.img.fidx",group="vm/100",namespace="",store="` + st.flags[1] + `"} 1`,
					`pbsdirect_drill_boot_success{archive="drive-scsi0.img.fidx",group="vm/101",namespace="",store="` + st.flags[1] + `"} 0`} {
					if !strings.Contains(string(prev), want) {
						t.Errorf("metrics lack %s:\n%s", want, prev)
					}
				}
			}
		})
	}

	// No QEMU on PATH: exit 3, with the package to install.
	t.Setenv("PATH", t.TempDir())
	r := pbs(t, append(append([]string{"boot-check"}, stores[0].flags...), "--boot-output", t.TempDir(), "vm/100")...)
	if r.code != 3 || !strings.Contains(r.err, "install qemu-system-x86") {
		t.Fatalf("without QEMU: %v", r)
	}
	noBootLeftovers(t, tmp)
}

// TestBootCheckInterrupted: SIGINT or SIGTERM to boot-check (the real
// process) while the guest runs ends it with exit 130 or 143; QEMU is
// stopped and the overlay, the NBD socket and the private directory are
// gone.
func TestBootCheckInterrupted(t *testing.T) {
	needBootTools(t)
	work := t.TempDir()
	im := bootimage.Build(t, work)
	store := fixture.NewStore(t)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "drive-scsi0.img:"+im.Path)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			cmd := exec.Command(os.Args[0], "boot-check", "--store", store, "--boot-pattern", "never shown", "--boot-output", out, "vm/100")
			cmd.Env = append(os.Environ(), runAsCLI+"=1", "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var werr error
			go func() { werr = cmd.Wait(); close(done) }()
			// Under way: the guest wrote to its console.
			deadline := time.Now().Add(60 * time.Second)
			for {
				logs, _ := filepath.Glob(filepath.Join(out, "*-console.log"))
				if len(logs) == 1 {
					if st, err := os.Stat(logs[0]); err == nil && st.Size() > 0 {
						break
					}
				}
				select {
				case <-done:
					t.Fatalf("boot-check ended before the guest ran: %v\n%s", werr, stderr.String())
				case <-time.After(50 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the guest did not start within 60 s")
				}
			}
			signalAndWait(t, cmd, done, c.sig, 30*time.Second, &stderr)
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != c.code {
				t.Errorf("after %v: %v, want exit %d; stderr: %s", c.sig, werr, c.code, stderr.String())
			}
			procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range procs {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), out) && strings.Contains(string(b), "qemu") {
					t.Errorf("QEMU still runs: %s", p)
				}
			}
			noBootLeftovers(t, tmp)
		})
	}
}

// TestBootCheckExportReadError: every chunk of the backed-up disk damaged,
// boot-check stops at the export's first failed read with exit 1 naming
// the damage (not "did not boot" after the guest hung on an I/O error).
func TestBootCheckExportReadError(t *testing.T) {
	needBootTools(t)
	work := t.TempDir()
	im := bootimage.Build(t, work)
	store := fixture.NewStore(t)
	mustOK(t, "backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "drive-scsi0.img:"+im.Path)
	chunks, _ := filepath.Glob(filepath.Join(store, ".chunks", "*", "*"))
	if len(chunks) == 0 {
		t.Fatal("no chunk files")
	}
	for _, c := range chunks {
		if err := os.WriteFile(c, bytes.Repeat([]byte{0x5a}, 64), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := pbs(t, "boot-check", "--store", store, "--boot-timeout", "3m", "--boot-output", t.TempDir(), "--output-format", "json", "vm/100")
	var got bootJSON
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("JSON: %v\n%v", err, r)
	}
	if r.code != 1 || strings.Contains(got.Error, "did not boot") || !strings.Contains(got.Error, "NBD export failed to read drive-scsi0.img.fidx") ||
		got.Boot == nil || got.Boot.OK || got.Boot.Reason != got.Error {
		t.Fatalf("want exit 1 naming the failed read: %v\nreport %+v", r, got.Boot)
	}
	noBootLeftovers(t, tmp)
}

// TestBootCheckStoreOutage: the store (S3 behind a proxy) answers every
// chunk read with 503 while the guest boots. Within --retry-for the
// export's read fails and boot-check stops at once with exit 3 (store
// unavailable), not "did not boot" after --boot-timeout. With a long
// --retry-for, SIGTERM while the export waits on the store ends the run
// at once (exit 143, the report says "interrupted") and leaves no private
// directory.
func TestBootCheckStoreOutage(t *testing.T) {
	needBootTools(t)
	work := t.TempDir()
	im := bootimage.Build(t, work)
	local := fixture.NewStore(t)
	mustOK(t, "backup", "--store", local, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "drive-scsi0.img:"+im.Path)
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	p, err := faultproxy.Start("127.0.0.1:0", s3.Endpoint, 0, faultproxy.Rule{Method: "GET", PathContains: "/.chunks/", Status: 503})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	bktSetEnv(t, "")
	store := []string{"--store", "s3://bkt/ds", "--s3-endpoint", p.URL}

	t.Run("outage", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		r := pbs(t, append(append([]string{"boot-check"}, store...), "--retry-for", "2s", "--boot-timeout", "3m", "--boot-output", t.TempDir(), "--output-format", "json", "vm/100")...)
		var got bootJSON
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("JSON: %v\n%v", err, r)
		}
		if r.code != 3 || strings.Contains(got.Error, "did not boot") || !strings.Contains(got.Error, "NBD export failed to read") || got.Boot == nil || got.Boot.OK {
			t.Fatalf("want exit 3, the failed read: %v\nreport %+v", r, got.Boot)
		}
		if n := strings.Count(r.err, "still throttled"); n != 1 {
			t.Errorf("the store's error said %d times on stderr, want once: %v", n, r)
		}
		noBootLeftovers(t, tmp)
	})

	t.Run("SIGTERM", func(t *testing.T) {
		tmp := t.TempDir()
		before := p.Matched()[0]
		cmd := exec.Command(os.Args[0], append([]string{"boot-check"}, append(store, "--retry-for", "10m", "--boot-timeout", "5m", "--boot-output", t.TempDir(), "vm/100")...)...)
		cmd.Env = append(os.Environ(), runAsCLI+"=1", "TMPDIR="+tmp)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var werr error
		go func() { werr = cmd.Wait(); close(done) }()
		// Under way: the guest's reads wait on the store.
		deadline := time.Now().Add(60 * time.Second)
		for p.Matched()[0] < before+3 {
			select {
			case <-done:
				t.Fatalf("boot-check ended before the outage: %v\n%s", werr, stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("no chunk read within 60 s")
			}
		}
		signalAndWait(t, cmd, done, syscall.SIGTERM, 60*time.Second, &stderr)
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.ExitCode() != 143 || !strings.Contains(stdout.String(), ": interrupted") {
			t.Errorf("after SIGTERM: %v, want exit 143 and the report\nstdout: %s\nstderr: %s", werr, stdout.String(), stderr.String())
		}
		// The interrupt said once; no read failing because the readers
		// were closed on it.
		if out := stdout.String() + stderr.String(); strings.Count(out, "interrupted (SIGTERM)") != 1 || strings.Contains(out, "reader closed") {
			t.Errorf("after SIGTERM:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
		}
		noBootLeftovers(t, tmp)
	})
}
