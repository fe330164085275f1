package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
)

// runAsCLI set to "1" makes the test binary run as pbsdirect (see cliBinary).
const runAsCLI = "PBSDIRECT_TEST_AS_CLI"

// TestMain points the user config directory at an empty temporary one, so
// that a default key file (~/.config/proxmox-backup/encryption-key.json) on
// the machine running the tests never changes what they do. With
// PBSDIRECT_TEST_AS_CLI=1 the test binary is pbsdirect itself (main with the
// arguments after the program name).
func TestMain(m *testing.M) {
	if os.Getenv(runAsCLI) == "1" {
		if p := os.Getenv(peakRSSEnv); p != "" {
			// Measured: the peak resident set size is written at the end.
			code := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
			writePeakRSS(p)
			os.Exit(code)
		}
		// Re-executed by a test as the command itself (as another user, or
		// to be signalled): main, with its signal handling and exit code.
		main()
		return
	}
	dir, err := os.MkdirTemp("", "pbsdirect-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	// Block-device restore journals of the tests go here, not into the
	// user's cache, so that no run leaves one behind for the next.
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pbsProcess runs pbsdirect with args in a child process (pbsProc) and
// returns its result and its own peak resident set size in bytes (VmHWM,
// not the wait status's maxrss, which starts from the test binary's own
// memory), for memory bounds that an in-process run cannot show.
func pbsProcess(t *testing.T, args ...string) (result, int64) {
	t.Helper()
	r := pbsProc(t, nil, args...)
	if r.maxRSS == 0 {
		t.Fatalf("no peak memory reported by %v", r.result)
	}
	return r.result, r.maxRSS
}

// TestRaiseProcs: GOMAXPROCS rises to jobs + writers for a restore (never
// falls), is put back after it, and is left alone when the GOMAXPROCS
// variable sets it.
func TestRaiseProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	for _, c := range []struct {
		env           string
		jobs, writers int
		want          int
	}{
		{"", prev, 3, prev + 3},
		{"", 1, 0, prev},
		{"3", prev, 3, prev},
	} {
		t.Setenv("GOMAXPROCS", c.env)
		restoreProcs := raiseProcs(restore.Options{Jobs: c.jobs, Writers: c.writers})
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("GOMAXPROCS=%q, %d jobs, %d writers: %d Ps, want %d", c.env, c.jobs, c.writers, got, c.want)
		}
		restoreProcs()
		if got := runtime.GOMAXPROCS(0); got != prev {
			t.Errorf("GOMAXPROCS=%q: %d Ps after the restore, want %d back", c.env, got, prev)
		}
	}
}

// TestTuningAids: PBSDIRECT_CPUPROFILE and PBSDIRECT_TRACE record a command's
// run into the named files; an unwritable path fails the command (exit 1).
func TestTuningAids(t *testing.T) {
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(3))
	dir := t.TempDir()
	prof, tr := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "run.trace")
	t.Setenv("PBSDIRECT_CPUPROFILE", prof)
	t.Setenv("PBSDIRECT_TRACE", tr)
	mustOK(t, "verify", "--store", store)
	for _, p := range []string{prof, tr} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: not written (%v)", p, err)
		}
	}
	t.Setenv("PBSDIRECT_TRACE", filepath.Join(dir, "missing", "run.trace"))
	// Not data: the run could not start its recording (exit 3).
	mustFail(t, 3, []string{"PBSDIRECT_TRACE"}, "verify", "--store", store)
}
