package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// keyOpenDelay is how long the passphrase of TestTimingFromKeyOpened takes
// to arrive: the time the reports must leave out.
const keyOpenDelay = 2 * time.Second

// slowPassphrase makes the next passphrase read (PBS_ENCRYPTION_PASSWORD_FD)
// wait for keyOpenDelay from now: the read end of
// a pipe whose passphrase line is written that late. The command closes the
// read end; the test closes the write end.
func slowPassphrase(t *testing.T, pass string) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("PBS_ENCRYPTION_PASSWORD") // t.Setenv restores it
	t.Setenv("PBS_ENCRYPTION_PASSWORD_FD", strconv.Itoa(fds[0]))
	w := os.NewFile(uintptr(fds[1]), "passphrase pipe")
	timer := time.AfterFunc(keyOpenDelay, func() { w.Write([]byte(pass + "\n")); w.Close() })
	t.Cleanup(func() {
		if timer.Stop() {
			w.Close()
		}
	})
}

// TestTimingFromKeyOpened: a restore's seconds (and so its MiB/s) and a
// drill's time to restore leave out opening the key file (its passphrase
// source, its key derivation): the passphrase arrives keyOpenDelay after the
// command starts, and the time reported must be short of the command's wall
// time by at least half of that delay. No bound on how fast the machine is:
// only a report that counts the wait fails.
func TestTimingFromKeyOpened(t *testing.T) {
	fixture.SkipIfShort(t)
	t.Setenv("PBS_ENCRYPTION_PASSWORD", "timing-pw")
	keyfile := filepath.Join(t.TempDir(), "key.json")
	mustOK(t, "key", "create", "--kdf", "pbkdf2", keyfile)
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(5), "--keyfile", keyfile)
	for _, cmd := range []string{"restore", "drill"} {
		t.Run(cmd, func(t *testing.T) {
			start := time.Now()
			slowPassphrase(t, "timing-pw")
			r := mustOK(t, cmd, "--output-format", "json", "--store", store, "--keyfile", keyfile, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw"))
			wall := time.Since(start)
			var v struct {
				Seconds        float64 `json:"seconds"`
				RestoreSeconds float64 `json:"time-to-restore-seconds"`
			}
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatalf("%v: %s", err, r.out)
			}
			if wall < keyOpenDelay {
				t.Fatalf("%s took %v, less than the passphrase's delay %v: the passphrase was not read from the pipe", cmd, wall, keyOpenDelay)
			}
			got := time.Duration(max(v.Seconds, v.RestoreSeconds) * float64(time.Second))
			if got <= 0 || got > wall-keyOpenDelay/2 {
				t.Errorf("%s took %v with a key opening of at least %v, reports %v: want the opening left out", cmd, wall.Round(time.Millisecond), keyOpenDelay, got.Round(time.Millisecond))
			}
		})
	}
}
