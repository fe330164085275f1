package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestVerifyAdvisesNoPrevious: bit rot that keeps a chunk's size and time
// is found by verify (exit 1), whose text and JSON reports then advise a
// backup with --no-previous (a backup counting on the damaged snapshot
// would reuse the chunk); such a backup replaces the chunk and its
// snapshot verifies. A clean verify gives no advice.
func TestVerifyAdvisesNoPrevious(t *testing.T) {
	data := fixture.Build(41, fixture.Region{Kind: fixture.Random, Len: 128 << 10})
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
	store := fixture.NewStore(t)
	backupAt := func(when string, extra ...string) {
		t.Helper()
		mustOK(t, append(append([]string{"backup", "--store", store, "--backup-type", "vm", "--backup-id", "100", "--backup-time", when,
			"--chunk-size", "64"}, extra...), "drive-scsi0.img:"+img)...)
	}
	backupAt(t0str)
	if code, rep := bktVerify(t, "--store", store); code != 0 || rep.Advice != "" {
		t.Fatalf("clean verify: exit %d, advice %q", code, rep.Advice)
	}
	var chunk string
	filepath.WalkDir(filepath.Join(store, ".chunks"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && chunk == "" {
			chunk = p
		}
		return nil
	})
	st, err := os.Stat(chunk)
	if err != nil {
		t.Fatal(err)
	}
	fixture.FlipByte(t, chunk, -1)
	if err := os.Chtimes(chunk, st.ModTime(), st.ModTime()); err != nil { // bit rot: time kept
		t.Fatal(err)
	}
	code, rep := bktVerify(t, "--store", store)
	if code != 1 || !strings.Contains(rep.Advice, "--no-previous") {
		t.Errorf("verify of the damaged store: exit %d, advice %q; want exit 1 and advice naming --no-previous", code, rep.Advice)
	}
	r := pbs(t, "verify", "--store", store)
	if r.code != 1 || !strings.Contains(r.out, "advice: ") || !strings.Contains(r.out, "--no-previous") {
		t.Errorf("text report of the damaged store: exit %d:\n%s", r.code, r.out)
	}
	backupAt("2026-11-29T11:00:00Z", "--no-previous")
	if code, _ := bktVerify(t, "--store", store, "vm/100/2026-11-29T11:00:00Z"); code != 0 {
		t.Errorf("snapshot of the --no-previous backup: verify exit %d", code)
	}
}
