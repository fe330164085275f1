package verify

import (
	"fmt"
	"io"
	"strings"

	"github.com/pbsdirect/pbsdirect/index"
)

// OKWord is how the text form says a result: "ok" or "FAILED".
func OKWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

// WriteText writes r in the text form verify and report merge print: the
// snapshot and its result, then each archive with its chunk counts and
// damaged chunks. Every string in r may come from the store (names, error
// texts quoting them) or from a report file that report merge reads: each
// is escaped (index.DisplayText).
func (r SnapshotResult) WriteText(w io.Writer) {
	dt := index.DisplayText
	if r.Skipped {
		fmt.Fprintf(w, "%s: skipped\n  note: %s\n", dt(r.Snapshot), dt(r.Note))
		return
	}
	word := OKWord(r.OK)
	if r.KeyUnavailable() {
		// Not verified, no damage: the key was not given.
		word = "NOT VERIFIED, " + strings.ReplaceAll(dt(r.Status), "-", " ")
		if r.KeyFingerprint != "" {
			word += " (fingerprint " + dt(r.KeyFingerprint) + ")"
		}
	}
	fmt.Fprintf(w, "%s: %s\n", dt(r.Snapshot), word)
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", dt(r.Error))
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", dt(r.Note))
	}
	for _, a := range r.Archives {
		word := OKWord(a.OK)
		if a.NotVerified {
			word = "not verified"
		}
		fmt.Fprintf(w, "  %-32s %s", dt(a.Archive), word)
		if a.CRCOnly {
			fmt.Fprint(w, " [CRC only, no key]")
		}
		if a.ChunksChecked > 0 || a.ChunksKnown > 0 || a.DamagedCount > 0 || a.ChunksFresh > 0 {
			fmt.Fprintf(w, " (%s%s", checkedChunks(a.ChunksChecked, a.DamagedCount), freshChunks(a.ChunksFresh, a.ChunksPresent))
			if a.ChunksKnown > 0 {
				fmt.Fprintf(w, ", %d already verified", a.ChunksKnown)
			}
			fmt.Fprint(w, ")")
		}
		fmt.Fprintln(w)
		if a.Error != "" && len(a.Damaged) == 0 {
			fmt.Fprintf(w, "    error: %s\n", dt(a.Error))
		}
		for _, d := range a.Damaged {
			var offs []string
			for _, o := range d.Offsets {
				offs = append(offs, fmt.Sprintf("[%d,%d)", o, o+uint64(d.Length)))
			}
			if d.OffsetCount > len(d.Offsets) {
				offs = append(offs, fmt.Sprintf("… (%d offsets)", d.OffsetCount))
			}
			what := "damaged"
			if d.Missing {
				what = "missing"
			}
			fmt.Fprintf(w, "    %s chunk %s at %s: %s\n", what, dt(d.Digest), strings.Join(offs, " "), dt(d.Error))
		}
		if n := a.DamagedCount - len(a.Damaged); n > 0 {
			fmt.Fprintf(w, "    … and %d more damaged chunk(s)\n", n)
		}
		if a.BadCopyCount > 0 {
			fmt.Fprintf(w, "    recovered from .bad copies: %d of them (intact there: pbsdirect restores them, PBS cannot; `pbsdirect repair --store STORE` or renaming the copies mends the store)\n", a.BadCopyCount)
		}
	}
}

// ChunksText says how many chunks the run checked, in the text form's
// summary line: "3 chunks checked, 5 skipped as fresh (5 confirmed
// present)", with damage "1 chunk verified, 2 damaged or missing", and
// when a damaged chunk may be counted in several archives, that it is.
func (r *Report) ChunksText() string {
	chunks := checkedChunks(r.ChunksChecked, r.DamagedChunks) + freshChunks(r.ChunksFresh, r.ChunksPresent)
	if r.DamagedChunks > 0 && len(r.Snapshots) > 1 {
		// Good chunks are checked once per run; a bad one is counted in
		// each archive that uses it.
		chunks += " (bad ones counted in each archive that uses them)"
	}
	return chunks
}

// checkedChunks says how many chunks were checked: "1 chunk checked", "3
// chunks checked", or with damage "1 chunk verified, 2 damaged or missing"
// (checked counts the good ones).
func checkedChunks(checked uint64, damaged int) string {
	n := fmt.Sprintf("%d chunk", checked)
	if checked != 1 {
		n += "s"
	}
	if damaged == 0 {
		return n + " checked"
	}
	return fmt.Sprintf("%s verified, %d damaged or missing", n, damaged)
}

// freshChunks says how many chunks were skipped as verified recently (a
// state) and how many of them were confirmed still there: ", 5 skipped as
// fresh (5 confirmed present)", or "" when none was skipped.
func freshChunks(fresh, present int) string {
	if fresh == 0 {
		return ""
	}
	return fmt.Sprintf(", %d skipped as fresh (%d confirmed present)", fresh, present)
}
