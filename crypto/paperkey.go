package crypto

import (
	"bytes"
	"errors"
)

// Paper-key markers around the pretty-printed key file JSON, as
// proxmox-backup-client key paperkey --output-format text prints them
// (package paperkey writes paper keys).
const (
	PaperKeyBegin = "-----BEGIN PROXMOX BACKUP KEY-----"
	PaperKeyEnd   = "-----END PROXMOX BACKUP KEY-----"
)

// ErrPaperKey is returned for text that has the paper-key begin marker but
// no end marker after it.
var ErrPaperKey = errors.New("paper key: no " + PaperKeyEnd + " line after " + PaperKeyBegin)

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
