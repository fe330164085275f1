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
