package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/verify"
)

// rawControl returns the index of the first byte of s that a terminal
// would act on rather than show: a C0 control other than line feed and
// tab, DEL, a C1 control (U+0080–U+009F), or a byte that is not UTF-8
// (a C1 control to a terminal that is not in UTF-8 mode); -1 if none.
func rawControl(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r != '\n' && r != '\t' && unicode.IsControl(r) {
			return i
		}
		i += n
	}
	return -1
}

// TestStoreTextEscapedEverywhere feeds control characters from the store
// and from report files through the text output of several commands: a
// manifest file name in verify's and restore's errors, junk in the
// datastore named in a listing warning on stderr, and report merge of a
// hostile shard report (snapshot, archive and store names, error texts
// with ESC, C1 controls and line ends). Neither stdout nor stderr may carry
// a raw control character; what was escaped is still shown.
func TestStoreTextEscapedEverywhere(t *testing.T) {
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(64<<10, 1))
	clean := mustOK(t, "verify", "--store", store, "--output-format", "json")
	check := func(what string, r result, shown ...string) {
		t.Helper()
		for name, s := range map[string]string{"stdout": r.out, "stderr": r.err} {
			if i := rawControl(s); i >= 0 {
				t.Errorf("%s: %s carries raw %q: %q", what, name, s[i:i+1], s)
			}
		}
		for _, w := range shown {
			if !strings.Contains(r.out+r.err, w) {
				t.Errorf("%s: does not show %q: %v", what, w, r)
			}
		}
	}

	// report merge of a report file whose strings are hostile.
	var rep verify.Report
	if err := json.Unmarshal([]byte(clean.out), &rep); err != nil || len(rep.Snapshots) != 1 || len(rep.Snapshots[0].Archives) == 0 {
		t.Fatalf("verify JSON: %v\n%s", err, clean.out)
	}
	evil := "\r\x1b[2K\x1b]52;c;Y3VybCB4IHwgc2gK\x07\u009b31m\nvm/100/fake: ok"
	s := &rep.Snapshots[0]
	s.Snapshot += evil
	s.OK, rep.OK = false, false
	s.Error = "damaged " + evil
	s.Note = "note " + evil
	s.Archives[0].Archive += evil
	s.Archives[0].Error = "archive " + evil
	s.Archives[0].OK = false
	s.Archives[0].Damaged = []verify.DamagedChunk{{Digest: "d" + evil, Offsets: []uint64{0}, OffsetCount: 1, Length: 4096, Error: "chunk " + evil}}
	s.Archives[0].DamagedCount = 1
	rep.DamagedChunks = 1
	rep.Skipped = []string{"vm/101/" + evil}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	repFile := filepath.Join(t.TempDir(), "shard.json")
	if err := os.WriteFile(repFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := pbs(t, "report", "merge", "--output-format", "text", repFile)
	check("report merge", r, `\r\x1b[2K\x1b]52;c;Y3VybCB4IHwgc2gK\a\u009b31m\nvm/100/fake: ok`)
	if strings.Contains(r.out, "\nvm/100/fake: ok") {
		t.Errorf("report merge: a line forged by a report: %q", r.out)
	}

	// A listing warning on stderr naming junk in the datastore.
	junk := filepath.Join(store, "vm", "1\x1b]0;owned\x07\u009b00", t0str, "index.json.blob")
	if err := os.MkdirAll(filepath.Dir(junk), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, "snapshots", "--store", store, "--output-format", "text")
	check("snapshots", r, "1 entry under vm/ names no snapshot", `vm/1\x1b]0;owned\a\u009b00/`+t0str)

	// A manifest file name with control characters: verify and restore
	// refuse the manifest and say so, escaped.
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) {
		m.Files[0].Filename = "drive-scsi0\x1b[8m\u009b.img.fidx"
	})
	r = pbs(t, "verify", "--store", store, "--output-format", "text")
	if r.code == 0 {
		t.Errorf("verify of a manifest with a hostile file name: exit 0: %v", r)
	}
	check("verify", r, `drive-scsi0\x1b[8m\u009b.img.fidx`)
	r = pbs(t, "restore", "--store", store, "--output-format", "text", "vm/100", "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
	if r.code == 0 {
		t.Errorf("restore from a manifest with a hostile file name: exit 0: %v", r)
	}
	check("restore", r, `drive-scsi0\x1b[8m\u009b.img.fidx`)
}
