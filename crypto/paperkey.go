package crypto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Paper-key markers around the pretty-printed key file JSON, as
// proxmox-backup-client key paperkey --output-format text prints them.
const (
	PaperKeyBegin = "-----BEGIN PROXMOX BACKUP KEY-----"
	PaperKeyEnd   = "-----END PROXMOX BACKUP KEY-----"
)

// ErrPaperKey is returned for text that has the paper-key begin marker but
// no end marker after it.
var ErrPaperKey = errors.New("paper key: no " + PaperKeyEnd + " line after " + PaperKeyBegin)

// PaperKeyText returns the text form of a paper key for kf, as
// proxmox-backup-client key paperkey --output-format text prints it (§5.3):
// an optional "Subject: …" line and an empty line, the begin marker, the key
// file as JSON indented by two spaces (serde_json's pretty form), the end
// marker. PBS prints a QR code of the same JSON after it; this form has none.
// The JSON between the markers is the key file itself, so the text can be
// typed back into a key file, or given to ParseKeyFile as it is.
func PaperKeyText(kf *KeyFile, subject string) ([]byte, error) {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(kf); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if subject != "" {
		fmt.Fprintf(&b, "Subject: %s\n\n", subject)
	}
	b.WriteString(PaperKeyBegin + "\n")
	b.Write(js.Bytes())
	b.WriteString(PaperKeyEnd + "\n")
	return b.Bytes(), nil
}

// PaperKeyPrivateText returns the text form of a paper key for a PEM private
// master key, as proxmox-backup-client prints it: the subject line, then the
// PEM's non-empty lines numbered from 0 ("%2d: line") in blocks of five, each
// block followed by a form feed (PBS puts a QR code of the block before it).
func PaperKeyPrivateText(pemData []byte, subject string) ([]byte, error) {
	text := strings.TrimRight(string(pemData), "\n\r\t ")
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimRight(l, "\r\t "); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "-----BEGIN ") || !strings.HasPrefix(lines[len(lines)-1], "-----END ") {
		return nil, errors.New("not a PEM private key")
	}
	var b bytes.Buffer
	if subject != "" {
		fmt.Fprintf(&b, "Subject: %s\n\n", subject)
	}
	const block = 5
	for start := 0; start < len(lines); start += block {
		for i := start; i < min(start+block, len(lines)); i++ {
			fmt.Fprintf(&b, "%2d: %s\n", i, lines[i])
		}
		b.WriteString("\f\n")
	}
	return b.Bytes(), nil
}

// paperKeyJSON returns the JSON between the paper-key markers of data, or
// data itself when it has no begin marker. Text before the begin marker (a
// subject line) and after the end marker (a QR code) is ignored.
func paperKeyJSON(data []byte) ([]byte, error) {
	_, rest, ok := bytes.Cut(data, []byte(PaperKeyBegin))
	if !ok {
		return data, nil
	}
	js, _, ok := bytes.Cut(rest, []byte(PaperKeyEnd))
	if !ok {
		return nil, ErrPaperKey
	}
	return js, nil
}
