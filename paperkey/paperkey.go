// Package paperkey prints a key file, or a PEM master private key, as a
// paper key: the text `proxmox-backup-client key paperkey --output-format
// text` prints, QR codes included (FORMAT.md §5.3). Reading the paper key
// of a key file back is crypto.ParseKeyFile's job; that of a master private
// key is PrivatePEM's.
package paperkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Text returns the paper key of kf as proxmox-backup-client prints it: an
// optional "Subject: …" line and an empty line, crypto.PaperKeyBegin, the
// key file as JSON indented by two spaces (serde_json's pretty form),
// crypto.PaperKeyEnd, then the QR code (QR) of the JSON lines joined by
// "\n" and an empty line. The JSON between the markers is the key file
// itself, so the whole text, QR code included, is accepted by
// crypto.ParseKeyFile, and the QR code scans back to a key file.
func Text(kf *crypto.KeyFile, subject string) ([]byte, error) {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(kf); err != nil {
		return nil, err
	}
	qr, err := QR(strings.TrimSuffix(js.String(), "\n"))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if subject != "" {
		fmt.Fprintf(&b, "Subject: %s\n\n", subject)
	}
	b.WriteString(crypto.PaperKeyBegin + "\n")
	b.Write(js.Bytes())
	b.WriteString(crypto.PaperKeyEnd + "\n")
	b.WriteString(qr + "\n")
	return b.Bytes(), nil
}

// PrivateBlockLines is the number of PEM lines in each block of a master
// key's paper key (PrivateText).
const PrivateBlockLines = 5

// PrivateText returns the paper key of a PEM private master key, as
// proxmox-backup-client prints it: the subject line, then the PEM's
// non-empty lines (trailing blanks cut) numbered from 0 ("%2d: line") in
// blocks of PrivateBlockLines, each block followed by the QR code of its
// lines joined by "\n", an empty line, and a form feed line ("\f\n"). Data
// that does not start with a "-----BEGIN " line and end with a "-----END "
// line is an error.
func PrivateText(pemData []byte, subject string) ([]byte, error) {
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
	for start := 0; start < len(lines); start += PrivateBlockLines {
		block := lines[start:min(start+PrivateBlockLines, len(lines))]
		for i, l := range block {
			fmt.Fprintf(&b, "%2d: %s\n", start+i, l)
		}
		qr, err := QR(strings.Join(block, "\n"))
		if err != nil {
			return nil, err
		}
		b.WriteString(qr + "\n")
		b.WriteString("\f\n")
	}
	return b.Bytes(), nil
}
