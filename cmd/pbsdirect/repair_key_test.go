package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestRepairForgedEncrypted: a mirror holds, under the name of a chunk the
// primary lacks, another chunk's valid encrypted bytes (CRC and structure
// pass). Without the key nothing of the snapshot is copied: it is
// key-missing, with its fingerprint, exit 3. With the key the forged copy
// fails its digest check: the next mirror's copy is taken, or with no
// other mirror the chunk has no good copy, exit 1. With --crc-only the
// forged copy is copied, flagged as checked by CRC only, and the summary
// warns.
func TestRepairForgedEncrypted(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no default key file
	key := filepath.Join(t.TempDir(), "enc.key")
	mustOK(t, "key", "create", "--kdf", "none", key)
	src := fixture.NewStore(t)
	backupImage(t, src, failoverImage(), "--chunk-size", "64", "--keyfile", key)
	_, ds := fixture.Digests(t, filepath.Join(src, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	victim, other := ds[2], ds[3]
	setup := func() (primary, forged, good string) {
		primary = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "primary"))
		forged = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "forged"))
		good = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "good"))
		remove(t, chunkFile(primary, victim))
		b, err := os.ReadFile(chunkFile(src, other))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(chunkFile(forged, victim), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return primary, forged, good
	}
	missing := func(primary string) bool {
		_, err := os.Stat(chunkFile(primary, victim))
		return os.IsNotExist(err)
	}

	t.Run("no key", func(t *testing.T) {
		primary, forged, _ := setup()
		rep := repairJSON(t, 3, "--store", primary, "--from", forged)
		if len(rep.KeyMissing) != 1 || rep.KeyMissing[0].Status != snapshot.KeyMissing || rep.KeyMissing[0].KeyFingerprint == "" || rep.Repaired != 0 || len(rep.Items) != 0 {
			t.Errorf("report: key-missing %+v, counts %+v, items %+v; want the snapshot key-missing, nothing copied", rep.KeyMissing, rep.Counts, rep.Items)
		}
		if !missing(primary) {
			t.Errorf("the forged copy was written into the primary")
		}
		r := pbs(t, "repair", "--store", primary, "--from", forged)
		if r.code != 3 || !strings.Contains(r.out, "key-missing") || !strings.Contains(r.out, rep.KeyMissing[0].KeyFingerprint) {
			t.Errorf("text: %v; want exit 3, key-missing and the fingerprint named", r)
		}
	})
	t.Run("key, forged only", func(t *testing.T) {
		primary, forged, _ := setup()
		rep := repairJSON(t, 1, "--store", primary, "--from", forged, "--keyfile", key)
		if rep.NoCopy != 1 || len(rep.Items) != 1 || len(rep.Items[0].Tried) != 1 || !strings.Contains(rep.Items[0].Tried[0], "digest") {
			t.Errorf("counts %+v, items %+v; want no good copy, the forged copy's digest mismatch said", rep.Counts, rep.Items)
		}
		if !missing(primary) {
			t.Errorf("the forged copy was written into the primary")
		}
	})
	t.Run("key, next mirror", func(t *testing.T) {
		primary, forged, good := setup()
		rep := repairJSON(t, 0, "--store", primary, "--from", forged, "--from", good, "--keyfile", key)
		if rep.Repaired != 1 || len(rep.Items) != 1 || rep.Items[0].Source != good || len(rep.Items[0].Tried) != 1 || rep.Items[0].CRCOnly {
			t.Errorf("counts %+v, items %+v; want copied from %s", rep.Counts, rep.Items, good)
		}
		mustOK(t, "verify", "--keyfile", key, "--store", primary, snap0)
	})
	t.Run("crc-only", func(t *testing.T) {
		primary, forged, _ := setup()
		rep := repairJSON(t, 0, "--store", primary, "--from", forged, "--crc-only")
		if rep.Repaired != 1 || rep.CRCOnly != 1 || len(rep.Items) != 1 || !rep.Items[0].CRCOnly || rep.CRCOnlyWarning == "" || len(rep.KeyMissing) != 0 {
			t.Errorf("report %+v; want the chunk copied, flagged crc-only, a warning", rep)
		}
		remove(t, chunkFile(primary, victim))
		r := pbs(t, "repair", "--store", primary, "--from", forged, "--crc-only")
		if r.code != 0 || !strings.Contains(r.out, "checked by CRC only (no key)") || !strings.Contains(r.out, "forged copy") {
			t.Errorf("text: %v; want the chunk flagged and a warning", r)
		}
	})
}
