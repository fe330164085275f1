package verify

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
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
// present)", with damage "1 chunk verified, 2 damaged or missing"; a
// damaged chunk several archives use is counted once ("1 damaged or
// missing (2 uses of 1 chunk(s) in the archives)") when every damaged
// chunk is listed, else it says that each archive counts it.
func (r *Report) ChunksText() string {
	if d := r.distinctDamaged(); d > 0 && d < r.DamagedChunks {
		// Every damaged chunk listed: counted once, as the JSON's
		// bad-copy-only-chunks counts them, with its uses.
		return checkedChunks(r.ChunksChecked, d) + fmt.Sprintf(" (%d uses of %d chunk(s) in the archives)", r.DamagedChunks, d) + freshChunks(r.ChunksFresh, r.ChunksPresent)
	}
	chunks := checkedChunks(r.ChunksChecked, r.DamagedChunks) + freshChunks(r.ChunksFresh, r.ChunksPresent)
	if r.DamagedChunks > 0 && len(r.Snapshots) > 1 {
		// Good chunks are checked once per run; a bad one is counted in
		// each archive that uses it.
		chunks += " (bad ones counted in each archive that uses them)"
	}
	return chunks
}

// distinctDamaged is the number of distinct damaged chunks (digest and
// length) when every damaged chunk of every archive is listed, else 0:
// not known.
func (r *Report) distinctDamaged() int {
	type id struct {
		digest string
		length int
	}
	seen := map[id]bool{}
	for _, s := range r.Snapshots {
		for _, a := range s.Archives {
			if a.DamagedCount != len(a.Damaged) {
				return 0
			}
			for _, d := range a.Damaged {
				seen[id{d.Digest, d.Length}] = true
			}
		}
	}
	return len(seen)
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

// OnlyKeysMissing reports whether r failed only for snapshots not
// verified for want of their key (WithoutKey): no damage found, nothing
// else left unchecked in the report.
func (r *Report) OnlyKeysMissing() bool {
	return !r.OK && r.WithoutKey > 0 && r.Damaged() == 0 && len(r.NotVerified) == 0
}

// ResultWord says the result of the whole run at the end of the text
// form's summary line: OKWord, except "NOT VERIFIED, no damage found" for
// a run that failed only for snapshots without their key
// (OnlyKeysMissing): no damage, no "FAILED".
func (r *Report) ResultWord() string {
	if r.OnlyKeysMissing() {
		return "NOT VERIFIED, no damage found"
	}
	return OKWord(r.OK)
}

// WithoutKeyText says why the snapshots without their key (WithoutKey)
// were not verified and what to do, one clause per cause joined by "; ",
// each count followed by see (e.g. " (see above)"): the key missing
// ("give --keyfile with their key"), the passphrase refused for a key
// file (named: "retry with the right passphrase"), a key file that could
// not be opened for another reason (named). "" when there are none. Key
// file names come from the command line or a report file: escaped.
func (r *Report) WithoutKeyText(see string) string {
	var missing, refused, unopened int
	var refusedFiles, unopenedFiles []string
	var detailed []string         // the clauses of snapshots whose key files failed each its own way
	detailedN := map[string]int{} // snapshots per clause
	for _, s := range r.Snapshots {
		if !s.KeyUnavailable() {
			continue
		}
		allRefused := len(s.KeyFiles) > 0
		for _, f := range s.KeyFiles {
			allRefused = allRefused && f.Reason == snapshot.KeyReasonPassphrase
		}
		switch {
		case s.Status == snapshot.KeyUnopened && allRefused:
			refused++
			for _, f := range s.KeyFiles {
				refusedFiles = appendNew(refusedFiles, index.DisplayText(f.File))
			}
		case s.Status == snapshot.KeyUnopened && len(s.KeyFiles) > 1:
			d := keyFilesText(s.KeyFiles)
			if detailedN[d] == 0 {
				detailed = append(detailed, d)
			}
			detailedN[d]++
		case s.Status == snapshot.KeyUnopened && len(s.KeyFiles) == 0 && s.PassphraseRefused:
			refused++
			refusedFiles = appendNew(refusedFiles, index.DisplayText(s.KeyFile))
		case s.Status == snapshot.KeyUnopened:
			unopened++
			f := s.KeyFile
			if len(s.KeyFiles) == 1 {
				f = s.KeyFiles[0].File
			}
			unopenedFiles = appendNew(unopenedFiles, index.DisplayText(f))
		default:
			missing++
		}
	}
	slices.Sort(refusedFiles)
	slices.Sort(unopenedFiles)
	var parts []string
	if missing > 0 {
		parts = append(parts, fmt.Sprintf("%d snapshot(s) not verified: no key given opens them (key missing)%s: give --keyfile with their key", missing, see))
	}
	if refused > 0 {
		parts = append(parts, fmt.Sprintf("%d snapshot(s) not verified: the passphrase was refused for %s (key error)%s: retry with the right passphrase", refused, strings.Join(refusedFiles, ", "), see))
	}
	if unopened > 0 {
		what := "their key file"
		if len(unopenedFiles) > 0 {
			what = "key file " + strings.Join(unopenedFiles, ", ")
		}
		parts = append(parts, fmt.Sprintf("%d snapshot(s) not verified: %s could not be opened (key error)%s", unopened, what, see))
	}
	for _, d := range detailed {
		p := fmt.Sprintf("%d snapshot(s) not verified (key error)%s: %s", detailedN[d], see, d)
		if strings.Contains(d, "the passphrase was refused") {
			p += ": retry with the right passphrase"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// keyFilesText says why each key file tried for a snapshot is not its
// key, in the order tried, joined by ", ": "the passphrase was refused
// for X", "Y is not the key it names", "Y carries no fingerprint and is
// another key", "Y could not be opened". Names are escaped.
func keyFilesText(files []KeyFileResult) string {
	var out []string
	for _, f := range files {
		name := index.DisplayText(f.File)
		switch f.Reason {
		case snapshot.KeyReasonPassphrase:
			out = append(out, "the passphrase was refused for "+name)
		case snapshot.KeyReasonClaim:
			out = append(out, name+" is not the key it names")
		case snapshot.KeyReasonOtherKey:
			out = append(out, name+" carries no fingerprint and is another key")
		default:
			out = append(out, name+" could not be opened")
		}
	}
	return strings.Join(out, ", ")
}

// appendNew appends s to list unless it is there already ("" never).
func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
