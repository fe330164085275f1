package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestStoreTextEscaped: notes and owners are written by whoever can write
// the store. In text output their control characters are escaped, so that
// escape sequences cannot repaint a failed verification as ok, set the
// clipboard (OSC 52) or the window title; JSON output keeps them exact.
func TestStoreTextEscaped(t *testing.T) {
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(64<<10, 1))
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fake := "vm/100/2026-11-20T02:00:00Z  1.00 MiB  none   ok        no         3 files"
	notes := "\r\x1b[2K" + fake + "\x1b[8m\x1b]52;c;Y3VybCB4IHwgc2gK\x07\u202e\u0085\nsecond line"
	owner := "root@pam\x1b]0;owned\x07"
	groupNotes := "\x1b[2J\x1b[Hall backups\tverified\n"
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) {
		js, _ := json.Marshal(notes)
		m.Unprotected["notes"] = js
		m.Unprotected["verify_state"] = json.RawMessage(`{"state":"failed","upid":"x"}`)
	})
	group := filepath.Join(store, "vm", "100")
	if err := os.WriteFile(filepath.Join(group, "owner"), []byte(owner+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(group, "notes"), []byte(groupNotes), 0o644); err != nil {
		t.Fatal(err)
	}
	unsafe := func(r rune) bool { return r != '\n' && (unicode.IsControl(r) || unicode.In(r, unicode.Cf)) }
	for _, cmd := range []string{"snapshots", "groups"} {
		r := mustOK(t, cmd, "--store", store, "--output-format", "text")
		if i := strings.IndexFunc(r.out, unsafe); i >= 0 {
			t.Errorf("%s writes %q from the store: %q", cmd, r.out[i:i+1], r.out)
		}
		if strings.Count(r.out, "\n") != 2 {
			t.Errorf("%s: want a header and one row: %q", cmd, r.out)
		}
	}
	r := mustOK(t, "snapshots", "--store", store, "--output-format", "text")
	if !strings.Contains(r.out, `\r\x1b[2K`) || !strings.Contains(r.out, "failed") {
		t.Errorf("snapshots: notes not shown escaped, or the failed state lost: %q", r.out)
	}
	r = mustOK(t, "groups", "--store", store, "--output-format", "text")
	if !strings.Contains(r.out, `root@pam\x1b]0;owned\a`) || !strings.Contains(r.out, `\x1b[2J\x1b[Hall backups\tverified`) {
		t.Errorf("groups: owner or notes not shown escaped: %q", r.out)
	}
	// JSON: exact, control characters escaped by the encoding (C1 included).
	unsafe = func(r rune) bool { return r != '\n' && unicode.IsControl(r) }
	r = mustOK(t, "groups", "--store", store, "--output-format", "json")
	if i := strings.IndexFunc(r.out, unsafe); i >= 0 {
		t.Errorf("groups JSON writes a control character: %q", r.out)
	}
	r2 := mustOK(t, "snapshots", "--store", store, "--output-format", "json")
	if i := strings.IndexFunc(r2.out, unsafe); i >= 0 {
		t.Errorf("snapshots JSON writes a control character: %q", r2.out)
	}
	var snaps []snapshotEntry
	if err := json.Unmarshal([]byte(r2.out), &snaps); err != nil || len(snaps) != 1 || snaps[0].Comment+"\nsecond line" != notes {
		t.Errorf("snapshots JSON: %v %+v", err, snaps)
	}
	var groups []groupEntry
	if err := json.Unmarshal([]byte(r.out), &groups); err != nil || len(groups) != 1 || groups[0].Owner != owner {
		t.Errorf("groups JSON: %v %+v", err, groups)
	}
}

// TestDisplayText: what the helper escapes and what it leaves alone.
func TestDisplayText(t *testing.T) {
	for in, want := range map[string]string{
		"root@pam":               "root@pam",
		"Grüße, 日本":              "Grüße, 日本",
		"a\tb\nc\rd":             `a\tb\nc\rd`,
		"\x1b[31mred\x07":        `\x1b[31mred\a`,
		"\x7f\u009b\u202e\u200b": `\x7f\u009b\u202e\u200b`,
		"bad\xffutf8":            `bad\xffutf8`,
		`back\slash`:             `back\slash`,
	} {
		if got := index.DisplayText(in); got != want {
			t.Errorf("DisplayText(%q) = %q, want %q", in, got, want)
		}
	}
}
