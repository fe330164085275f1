package verify

import (
	"strings"
	"testing"
)

// TestWriteText: the text form of a snapshot result: counts, fresh chunks,
// damaged chunks with their ranges, the ones not listed, and store text
// escaped.
func TestWriteText(t *testing.T) {
	r := SnapshotResult{Snapshot: "vm/100/2026-11-29T10:00:00Z", Archives: []ArchiveResult{
		{Archive: "drive-scsi0.img.fidx", OK: true, ChunksChecked: 3, ChunksFresh: 2, ChunksPresent: 2, ChunksKnown: 1},
		{Archive: "drive-scsi1.img.fidx\x1b[2J", ChunksChecked: 1, DamagedCount: 2, Damaged: []DamagedChunk{
			{Digest: "ab", Offsets: []uint64{0, 8}, OffsetCount: 3, Length: 4, Error: "digest mismatch", Missing: false},
		}},
	}}
	var b strings.Builder
	r.WriteText(&b)
	want := "vm/100/2026-11-29T10:00:00Z: FAILED\n" +
		"  drive-scsi0.img.fidx             ok (3 chunks checked, 2 skipped as fresh (2 confirmed present), 1 already verified)\n" +
		"  drive-scsi1.img.fidx\\x1b[2J      FAILED (1 chunk verified, 2 damaged or missing)\n" +
		"    damaged chunk ab at [0,4) [8,12) … (3 offsets): digest mismatch\n" +
		"    … and 1 more damaged chunk(s)\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	rep := Report{Snapshots: []SnapshotResult{r, r}, ChunksChecked: 4, DamagedChunks: 2}
	if got := rep.ChunksText(); got != "4 chunks verified, 2 damaged or missing (bad ones counted in each archive that uses them)" {
		t.Errorf("ChunksText = %q", got)
	}
}

// TestKeyWording: a run that failed only for snapshots without their key
// says no damage was found (not FAILED), and what to do for each cause:
// the key missing, the passphrase refused for a named key file, a key
// file not opened otherwise; damage elsewhere keeps FAILED.
func TestKeyWording(t *testing.T) {
	ok := SnapshotResult{Snapshot: "vm/100/2026-11-29T10:00:00Z", OK: true}
	missing := SnapshotResult{Snapshot: "vm/200/2026-11-29T10:00:00Z", Status: "key-missing"}
	refused := func(snap, file string) SnapshotResult {
		return SnapshotResult{Snapshot: snap, Status: "key-error", KeyFile: file, PassphraseRefused: true}
	}
	other := SnapshotResult{Snapshot: "vm/500/2026-11-29T10:00:00Z", Status: "key-error", KeyFile: "c.json\x1b"}
	damaged := SnapshotResult{Snapshot: "vm/600/2026-11-29T10:00:00Z", Error: "damaged"}
	for _, c := range []struct {
		name     string
		snaps    []SnapshotResult
		word     string
		want     []string
		wantNone []string
	}{
		{"ok", []SnapshotResult{ok}, "ok", nil, nil},
		{"key missing", []SnapshotResult{ok, missing}, "NOT VERIFIED, no damage found",
			[]string{"1 snapshot(s) not verified: no key given opens them (key missing) (see above): give --keyfile with their key"}, []string{"passphrase"}},
		{"passphrase refused", []SnapshotResult{refused("vm/300/2026-11-29T10:00:00Z", "b.json"), refused("vm/400/2026-11-29T10:00:00Z", "a.json"), refused("vm/401/2026-11-29T10:00:00Z", "a.json")},
			"NOT VERIFIED, no damage found",
			[]string{"3 snapshot(s) not verified: the passphrase was refused for a.json, b.json (key error) (see above): retry with the right passphrase"}, []string{"give --keyfile", "key missing"}},
		{"all causes", []SnapshotResult{missing, refused("vm/300/2026-11-29T10:00:00Z", "b.json"), other}, "NOT VERIFIED, no damage found",
			[]string{"key missing", "refused for b.json", `key file c.json\x1b could not be opened`}, []string{"\x1b"}},
		{"damage elsewhere", []SnapshotResult{missing, damaged}, "FAILED", []string{"key missing"}, nil},
	} {
		rep := Report{OK: true}
		for _, s := range c.snaps {
			rep.Add(s)
		}
		if got := rep.ResultWord(); got != c.word {
			t.Errorf("%s: ResultWord %q, want %q", c.name, got, c.word)
		}
		text := rep.WithoutKeyText(" (see above)")
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", c.name, text, w)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(text, w) {
				t.Errorf("%s: %q says %q", c.name, text, w)
			}
		}
	}
}

// TestChunksTextDistinct: one damaged chunk (intact only in a .bad copy)
// used by two archives is counted once in the summary, as the JSON's
// bad-copy-only-chunks counts it, with its two uses.
func TestChunksTextDistinct(t *testing.T) {
	bad := DamagedChunk{Digest: "ab", Offsets: []uint64{0}, OffsetCount: 1, Length: 4, Error: "digest mismatch"}
	r := SnapshotResult{Snapshot: "vm/100/2026-11-29T10:00:00Z", Archives: []ArchiveResult{
		{Archive: "drive-scsi0.img.fidx", ChunksChecked: 3, DamagedCount: 1, BadCopyCount: 1, Damaged: []DamagedChunk{bad}},
		{Archive: "drive-scsi1.img.fidx", ChunksChecked: 1, DamagedCount: 1, BadCopyCount: 1, Damaged: []DamagedChunk{bad}},
	}}
	var rep Report
	rep.Add(r)
	rep.BadCopyChunks = 1
	if got, want := rep.ChunksText(), "4 chunks verified, 1 damaged or missing (2 uses of 1 chunk(s) in the archives)"; got != want {
		t.Errorf("ChunksText = %q, want %q", got, want)
	}
}
