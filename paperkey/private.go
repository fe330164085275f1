package paperkey

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxPrivateTextSize is the largest paper key of a master private key
// (PrivateText) read back, in bytes: room for that of an 8192-bit RSA key
// (about 140 KiB, QR codes included); proxmox-backup-client makes 4096-bit
// master keys, whose paper key is about 68 KiB — more than a key file
// may have.
const MaxPrivateTextSize = 256 << 10

// ErrPrivateText is wrapped by the errors of PrivatePEM for text that
// numbers lines as a paper key does but cannot be read back: lines missing,
// numbered twice with different text, or no PEM between them.
var ErrPrivateText = errors.New("not a readable paper key of a master key")

// numbered is a line of a master key's paper key: "%2d: line", leading
// blanks allowed (typed back by hand).
var numbered = regexp.MustCompile(`^\s*([0-9]{1,4}):\s?(\S.*)$`)

// PrivatePEM reads back the paper key of a PEM master private key
// (PrivateText): the whole printout, QR codes, subject and form feeds
// included, or only its numbered lines typed back. It returns the PEM
// (lines joined by "\n", with a final "\n") and true, or nil and false
// when text has no numbered line (no such paper key: the caller takes text
// as it is). Text with numbered lines that do not make a whole PEM from
// line 0 on — a line missing, one numbered twice with different text, no
// "-----BEGIN " first or "-----END " last — is an error wrapping
// ErrPrivateText that names the line; the key's text is never quoted.
func PrivatePEM(text []byte) ([]byte, bool, error) {
	lines := map[int]string{}
	last := -1
	for l := range strings.SplitSeq(string(text), "\n") {
		m := numbered.FindStringSubmatch(strings.TrimRight(l, "\r\t "))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if prev, dup := lines[n]; dup && prev != m[2] {
			return nil, true, fmt.Errorf("%w: line %d is there twice, with different text", ErrPrivateText, n)
		}
		lines[n] = m[2]
		last = max(last, n)
	}
	if last < 0 {
		return nil, false, nil
	}
	var b strings.Builder
	for i := 0; i <= last; i++ {
		l, ok := lines[i]
		if !ok {
			return nil, true, fmt.Errorf("%w: line %d of 0..%d is missing", ErrPrivateText, i, last)
		}
		b.WriteString(l + "\n")
	}
	if !strings.HasPrefix(lines[0], "-----BEGIN ") || !strings.HasPrefix(lines[last], "-----END ") {
		return nil, true, fmt.Errorf("%w: its numbered lines 0..%d do not run from a -----BEGIN line to an -----END line", ErrPrivateText, last)
	}
	return []byte(b.String()), true, nil
}
