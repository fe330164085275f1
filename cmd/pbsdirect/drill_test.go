package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

func TestDrill(t *testing.T) {
	data := zeroMiddle(11)
	keyDir := t.TempDir()
	key, _ := fixture.Key(t, 3)
	keyFile := fixture.KeyFile(t, keyDir, "key.json", key, crypto.KDFNone, "")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"plain", nil},
		{"encrypted", []string{"--keyfile", keyFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := fixture.NewStore(t)
			img := backupImage(t, store, data, tc.args...)
			target := filepath.Join(t.TempDir(), "drill.raw")
			args := append([]string{"drill", "--output-format", "json", "--store", store}, tc.args...)
			r := mustOK(t, append(args, snap0, "drive-scsi0", target)...)
			var rep drill.Report
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
				t.Fatalf("drill JSON: %v\n%s", err, r.out)
			}
			if !rep.OK || rep.ReadBack == nil || rep.Restore == nil || rep.RestoreSeconds <= 0 {
				t.Fatalf("drill report incomplete: %+v", rep)
			}
			if rep.ReadBack.ChunksChecked == 0 || rep.ReadBack.ZeroBytesChecked+rep.ReadBack.HoleBytes != rep.Restore.ZeroBytes {
				t.Errorf("read-back did not cover the image: %+v, zero bytes %d", *rep.ReadBack, rep.Restore.ZeroBytes)
			}
			orig, _ := os.ReadFile(img)
			fixture.Equal(t, target, orig)

			// --remove deletes the target it created after success.
			target2 := filepath.Join(t.TempDir(), "drill2.raw")
			mustOK(t, append(args, "--remove", snap0, "drive-scsi0", target2)...)
			noFile(t, target2)
		})
	}
}

func TestDrillFails(t *testing.T) {
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(12))
	// Remove one data chunk: the restore fails, the drill reports ok=false and exits 1.
	var victim string
	filepath.WalkDir(filepath.Join(store, ".chunks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && victim == "" && !strings.HasPrefix(d.Name(), "bb9f8df6") {
			victim = p
		}
		return nil
	})
	if victim == "" {
		t.Fatal("no chunk file found")
	}
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "drill.raw")
	// Given as TYPE/ID: the report names the snapshot it resolved to, also
	// on failure, and says nothing of a removal that did not happen.
	r := pbs(t, "drill", "--output-format", "json", "--store", store, "vm/100", "drive-scsi0", target)
	if r.code != 1 {
		t.Fatalf("want exit 1: %v", r)
	}
	var rep drill.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("drill JSON: %v\n%s", err, r.out)
	}
	if rep.OK || !strings.Contains(rep.Error, filepath.Base(victim)) {
		t.Errorf("report should fail naming digest %s: %+v", filepath.Base(victim), rep)
	}
	if rep.Snapshot != snap0 || strings.Contains(r.out, "target-removed") {
		t.Errorf("report names snapshot %q (want %s, resolved from vm/100) or says target-removed: %s", rep.Snapshot, snap0, r.out)
	}
	noFile(t, target)
	r = pbs(t, "drill", "--store", store, "vm/100", "drive-scsi0", target)
	if r.code != 1 || !strings.Contains(r.out, "drill "+snap0+"/drive-scsi0") {
		t.Errorf("text report should name %s: %v", snap0, r)
	}
	// A TARGET refused as given is a usage error, not a failed drill: no
	// report on stdout (a monitoring scrape would count it as one).
	exists := fixture.WriteFile(t, t.TempDir(), "exists.raw", []byte("keep"))
	r = pbs(t, "drill", "--store", store, "vm/100", "drive-scsi0", exists)
	if r.code != 2 || strings.Contains(r.out, "FAILED") || !strings.Contains(r.err, "exists") {
		t.Errorf("drill onto an existing file: %v; want exit 2, no report", r)
	}
}

// TestVerifyCRCOnly: an encrypted snapshot verified without its key fails
// with a hint, unless --crc-only asks for the structure and CRC checks PBS's
// own verify does; those still catch a flipped byte.
func TestVerifyCRCOnly(t *testing.T) {
	key, _ := fixture.Key(t, 5)
	keyFile := fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")
	store := fixture.NewStore(t)
	backupImage(t, store, zeroMiddle(31), "--keyfile", keyFile)

	r := pbs(t, "verify", "--store", store, snap0)
	if r.code != 3 || !strings.Contains(r.out, "missing key") || !strings.Contains(r.out, "--crc-only") {
		t.Errorf("without key: want exit 3 (no damage), missing key and the --crc-only hint: %v", r)
	}
	r = mustOK(t, "verify", "--store", store, "--crc-only", snap0)
	if !strings.Contains(r.out, "CRC only") {
		t.Errorf("output should say the check was CRC only: %v", r)
	}

	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	_, ds := fixture.Digests(t, fixture.SnapPath(store, snap, "drive-scsi0.img.fidx"))
	fixture.FlipByte(t, fixture.ChunkPath(store, ds[0]), -1)
	r = pbs(t, "verify", "--store", store, "--crc-only", snap0)
	if r.code != 1 || !strings.Contains(r.out, ds[0].String()) || !strings.Contains(r.out, "CRC") {
		t.Errorf("want exit 1 naming chunk %s and the CRC: %v", ds[0], r)
	}
}

// TestDrillRemoveKeeps: drill --remove deletes only a target the drill
// created: an existing file (overwritten with --force) and a block device
// stay, with the restored bytes, and the report says nothing was removed.
func TestDrillRemoveKeeps(t *testing.T) {
	fixture.SkipIfShort(t)
	data := zeroMiddle(13)
	store := fixture.NewStore(t)
	backupImage(t, store, data)
	drillTo := func(target string) drill.Report {
		t.Helper()
		r := mustOK(t, "drill", "--output-format", "json", "--force", "--remove", "--store", store, snap0, "drive-scsi0", target)
		var rep drill.Report
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("drill JSON: %v\n%s", err, r.out)
		}
		if !rep.OK || rep.Removed {
			t.Errorf("drill of the existing %s: ok %v, target-removed %v", target, rep.OK, rep.Removed)
		}
		return rep
	}
	t.Run("existing-file", func(t *testing.T) {
		target := fixture.WriteFile(t, t.TempDir(), "old.raw", []byte("an older image"))
		drillTo(target)
		fixture.Equal(t, target, data)
	})
	t.Run("device", func(t *testing.T) {
		dev, _ := fixture.LoopDevice(t, int64(len(data)), []byte{0x5a})
		drillTo(dev)
		if st, err := os.Stat(dev); err != nil || st.Mode()&os.ModeDevice == 0 {
			t.Fatalf("%s after drill --remove: %v %v", dev, st, err)
		}
		got, err := os.ReadFile(dev)
		if err != nil {
			t.Fatal(err)
		}
		fixture.EqualBytes(t, dev, got, data)
	})
}

// TestDrillSalvage: a drill of a snapshot with a chunk intact only as a
// .bad copy passes (exit 0: pbsdirect can restore it) but says so, as
// restore does: the copy named in the text and the JSON
// (recovered-from-bad-copies and its count), and a warning that PBS itself
// cannot restore the snapshot until the store is repaired. A fleet drill
// passes too and says the same in its reports, summary line and table.
func TestDrillSalvage(t *testing.T) {
	data := fixture.Build(43, fixture.Region{Kind: fixture.Random, Len: 1 << 20})
	store := fixture.NewStore(t)
	backupImage(t, store, data, "--chunk-size", "256")
	_, ds := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	p := chunkFile(store, ds[0])
	if err := os.Rename(p, p+".0.bad"); err != nil {
		t.Fatal(err)
	}
	copyPath := p + ".0.bad"
	const warn = "PBS itself cannot restore this snapshot until the store is repaired (`pbsdirect repair --store STORE`)"

	r := mustOK(t, "drill", "--output-format", "json", "--store", store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "d.raw"))
	var rep drill.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("drill JSON: %v\n%s", err, r.out)
	}
	if !rep.OK || rep.ExitCode != 0 || rep.SalvagedChunks != 1 || len(rep.Salvaged) != 1 || rep.Salvaged[0].Copy != copyPath || !strings.Contains(rep.Warning, warn) {
		t.Errorf("drill JSON: want ok, exit 0, 1 chunk recovered from %s and the warning:\n%s", copyPath, r.out)
	}

	r = mustOK(t, "drill", "--store", store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "d.raw"))
	for _, want := range []string{"recovered from a .bad copy: " + copyPath, "warning: 1 chunk(s) intact only in a .bad copy: " + warn} {
		if !strings.Contains(r.out, want) {
			t.Errorf("drill text lacks %q:\n%s", want, r.out)
		}
	}

	scratch := t.TempDir()
	r = mustOK(t, "drill", "--output-format", "json", "--store", store, "--scratch", scratch)
	// The count three times: in the report's restore summary, the report
	// and the summary line.
	if strings.Count(r.out, `"recovered-from-bad-copies-count":1`) != 3 || !strings.Contains(r.out, `"archives-recovered-from-bad-copies":1`) || !strings.Contains(r.out, warn) {
		t.Errorf("fleet drill JSON: want the report and the summary to count the recovered chunk:\n%s", r.out)
	}
	r = mustOK(t, "drill", "--store", store, "--scratch", scratch)
	if !strings.Contains(r.out, "warning: 1 archive(s) passed only with 1 chunk(s) recovered from .bad copies") {
		t.Errorf("fleet drill table: no warning:\n%s", r.out)
	}
}

// TestFleetExitCode: a fleet drill fails with 1 when any drill found
// damage, else 3 when any failure lies outside the data, else 2 (every
// failure a usage error); drills not run count for nothing.
func TestFleetExitCode(t *testing.T) {
	ok := drill.Report{OK: true, Archive: "a"}
	fail := func(code int) drill.Report { return drill.Report{Archive: "a", ExitCode: code} }
	for _, c := range []struct {
		reps []drill.Report
		want int
	}{
		{[]drill.Report{ok, fail(exitUsage), fail(exitUsage)}, exitUsage},
		{[]drill.Report{fail(exitUsage), fail(exitOutside)}, exitOutside},
		{[]drill.Report{fail(exitOutside), fail(exitData), fail(exitUsage)}, exitData},
		{[]drill.Report{fail(exitOutside), {Archive: "b", NotRun: true}, fail(130)}, exitOutside},
	} {
		if got := fleetExitCode(c.reps); got != c.want {
			t.Errorf("fleetExitCode(%+v) = %d, want %d", c.reps, got, c.want)
		}
	}
}
