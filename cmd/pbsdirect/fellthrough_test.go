package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

// TestFellThroughLists: verify and restore over two stores, the first
// missing two chunks and holding one damaged, name in text and JSON, under
// the first store, each chunk that fell through, why, and the store that
// served it; verify's --damaged-list gets one line for each, told from a
// damaged chunk's line by "fell_through".
func TestFellThroughLists(t *testing.T) {
	data := failoverImage()
	primary := fixture.NewStore(t)
	backupImage(t, primary, data, "--chunk-size", "64")
	mirror := fixture.CopyDir(t, primary, filepath.Join(t.TempDir(), "mirror"))
	_, ds := fixture.Digests(t, filepath.Join(primary, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	remove(t, chunkFile(primary, ds[2]))
	remove(t, chunkFile(primary, ds[7]))
	flipByte(t, chunkFile(primary, ds[11]))
	want := map[string]string{ds[2].String(): chunkstore.ReasonMissing, ds[7].String(): chunkstore.ReasonMissing, ds[11].String(): chunkstore.ReasonDamaged}
	stores := []string{"--store", primary, "--store", mirror}

	check := func(what string, m []chunkstore.MemberStats) {
		t.Helper()
		if len(m) != 2 || len(m[0].FellThrough) != len(want) || len(m[1].FellThrough) != 0 {
			t.Fatalf("%s: stores = %+v", what, m)
		}
		for _, f := range m[0].FellThrough {
			if want[f.Digest] != f.Reason || f.ServedBy != mirror {
				t.Errorf("%s: fell through %+v, want reason %q served by %s", what, f, want[f.Digest], mirror)
			}
		}
	}
	// verify, JSON and damaged list.
	list := filepath.Join(t.TempDir(), "damaged.jsonl")
	r := mustOK(t, append([]string{"verify", "--output-format", "json", "--damaged-list", list}, append(stores, snap0)...)...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.out)
	}
	check("verify JSON", rep.Stores)
	f, err := os.Open(list)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var l fellThroughLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("damaged list line %q: %v", sc.Text(), err)
		}
		if l.Store != primary || want[l.Digest] != l.FellThrough || l.ServedBy != mirror || l.Error == "" {
			t.Errorf("damaged list line %q", sc.Text())
		}
	}
	if lines != len(want) {
		t.Errorf("damaged list has %d lines, want %d", lines, len(want))
	}
	// verify, text.
	r = mustOK(t, append([]string{"verify"}, append(stores, snap0)...)...)
	for d, why := range want {
		if !strings.Contains(r.out, "fell through: chunk "+d+" "+why) || !strings.Contains(r.out, "served by "+mirror) {
			t.Errorf("verify text does not name %s %s: %v", d, why, r)
		}
	}
	// restore, JSON and text.
	var s restore.Summary = restoreJSON(t, append(stores, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))...)
	check("restore JSON", s.Stores)
	r = mustOK(t, append(append([]string{"restore"}, stores...), snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw"))...)
	if c := strings.Count(r.out, "fell through: chunk "); c != len(want) {
		t.Errorf("restore text names %d chunks that fell through, want %d: %v", c, len(want), r)
	}
}
