package index

import (
	"bytes"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// maxNameLen is the longest backup-id or archive file name in bytes: each
// is a file name in the datastore (NAME_MAX).
const maxNameLen = 255

// ManifestBlobName is the snapshot file holding the manifest (§1.4).
const ManifestBlobName = "index.json.blob"

// RSAKeyBlobName is the snapshot file holding the encryption key encrypted
// under a master public key: a plain blob listed with crypt mode encrypt (§5.5).
const RSAKeyBlobName = "rsa-encrypted.key.blob"

// CryptMode is an archive's crypt-mode in the manifest (§5.6, §6.1).
type CryptMode string

// The three crypt modes (§5.6).
const (
	CryptNone     CryptMode = "none"      // plain chunks, unsigned manifest
	CryptEncrypt  CryptMode = "encrypt"   // encrypted chunks, keyed digests, signed manifest
	CryptSignOnly CryptMode = "sign-only" // plain chunks, signed manifest
)

// ParseCryptMode accepts "none", "encrypt" and "sign-only" (case-sensitive);
// anything else returns ErrBadManifest.
func ParseCryptMode(s string) (CryptMode, error) {
	switch m := CryptMode(s); m {
	case CryptNone, CryptEncrypt, CryptSignOnly:
		return m, nil
	}
	return "", fmt.Errorf("%w: unknown crypt-mode %.32q (want none, encrypt or sign-only)", ErrBadManifest, s)
}

// FileInfo is one manifest files[] entry (§6.1, §6.2).
type FileInfo struct {
	Filename  string    // archive name with extension, e.g. "drive-scsi0.img.fidx"
	CryptMode CryptMode // "none" when absent in the JSON
	Size      uint64    // bytes: content length (.fidx), archive length (.didx) or encoded blob length (.blob)
	Csum      [32]byte  // index csum (.fidx/.didx) or SHA256 of the encoded blob file (.blob)
}

// Manifest is a parsed index.json (§6). Unknown fields of the typed part are
// dropped, as PBS does; Unprotected is kept verbatim (values re-encoded on
// Marshal with keys sorted).
type Manifest struct {
	BackupType string     // "vm", "ct" or "host"
	BackupID   string     // e.g. "100"
	BackupTime int64      // epoch seconds
	Files      []FileInfo // in manifest order (the order matters for the signature)
	// Unprotected is the unsigned "unprotected" object (§6.4), each value as
	// raw JSON; nil or empty when absent.
	Unprotected map[string]json.RawMessage
	// Signature is the "signature" string (lowercase hex HMAC, §6.3), nil
	// when null or absent. Kept exactly as stored.
	Signature *string
}

// ParseManifest parses manifest JSON (the decoded payload of
// index.json.blob, §6.1). Required: backup-type (vm|ct|host), backup-id,
// backup-time (integer), files (array of objects with filename, size,
// 64-hex-digit csum, optional crypt-mode defaulting to "none"). unprotected
// defaults to {} and must be an object or null; signature must be 64
// lowercase hex digits, null or absent. Keys are matched case-sensitively;
// duplicate keys in the typed part, invalid UTF-8, trailing data and archive
// names that could escape the snapshot directory (see ValidArchiveName) are
// rejected; unknown keys are ignored. What PBS never writes is refused too,
// naming the field: a backup-id outside [A-Za-z0-9_][A-Za-z0-9._-]*, a
// backup-time outside the snapshot names, a file listed twice, an index of
// size 0, a key-fingerprint or a crypt-mode other than none without a
// signature. All errors wrap ErrBadManifest (or ErrBadName for an unsafe
// archive name); none echoes the manifest's bytes beyond names and numbers.
func ParseManifest(data []byte) (*Manifest, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrBadManifest)
	}
	top, err := decodeObject(data, "manifest")
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	if err := reqField(top, "backup-type", "manifest", &m.BackupType); err != nil {
		return nil, err
	}
	if !validType(m.BackupType) {
		return nil, fmt.Errorf("%w: backup-type %.32q (want vm, ct or host)", ErrBadManifest, m.BackupType)
	}
	if err := reqField(top, "backup-id", "manifest", &m.BackupID); err != nil {
		return nil, err
	}
	if !validName(m.BackupID) || len(m.BackupID) > maxNameLen {
		return nil, fmt.Errorf("%w: backup-id %.64q does not match [A-Za-z0-9_][A-Za-z0-9._-]*", ErrBadManifest, m.BackupID)
	}
	if err := reqField(top, "backup-time", "manifest", &m.BackupTime); err != nil {
		return nil, err
	}
	if t, err := ParseTime(FormatTime(m.BackupTime)); err != nil || t != m.BackupTime || t <= 0 {
		return nil, fmt.Errorf("%w: backup-time %d is not a snapshot time (1970 to 9999)", ErrBadManifest, m.BackupTime)
	}
	var files []json.RawMessage
	if err := reqField(top, "files", "manifest", &files); err != nil {
		return nil, err
	}
	m.Files = make([]FileInfo, 0, len(files))
	seen := make(map[string]bool, len(files))
	for i, raw := range files {
		fi, err := parseFileInfo(raw, i)
		if err != nil {
			return nil, err
		}
		if seen[fi.Filename] {
			return nil, fmt.Errorf("%w: files[%d]: filename %.64q is listed twice", ErrBadManifest, i, fi.Filename)
		}
		seen[fi.Filename] = true
		m.Files = append(m.Files, fi)
	}
	if raw, ok := top["unprotected"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &m.Unprotected); err != nil || m.Unprotected == nil {
			return nil, fmt.Errorf("%w: unprotected is not a JSON object", ErrBadManifest)
		}
	}
	if raw, ok := top["signature"]; ok && !isNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: signature is not a string or null", ErrBadManifest)
		}
		if !isLowerHex(s, 64) {
			return nil, fmt.Errorf("%w: signature is not 64 lowercase hex digits (an HMAC-SHA256, §6.3)", ErrBadManifest)
		}
		m.Signature = &s
	}
	if err := m.checkSigned(); err != nil {
		return nil, err
	}
	return m, nil
}

// checkSigned refuses the combinations PBS never writes: it signs the
// manifest and records the key's fingerprint together, whenever a key takes
// part in the backup (crypt mode encrypt or sign-only, §6.3, §6.4).
func (m *Manifest) checkSigned() error {
	_, hasFP, err := m.KeyFingerprint()
	if err != nil {
		return err
	}
	if m.Signature != nil {
		return nil
	}
	if hasFP {
		return fmt.Errorf("%w: unprotected.key-fingerprint is set but signature is null (PBS signs whenever it records a key)", ErrBadManifest)
	}
	for i, f := range m.Files {
		if f.CryptMode != CryptNone {
			return fmt.Errorf("%w: files[%d] (%.64q) has crypt-mode %s but signature is null (PBS signs every manifest written with a key)",
				ErrBadManifest, i, f.Filename, f.CryptMode)
		}
	}
	return nil
}

// isLowerHex reports whether s is n lowercase hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func parseFileInfo(raw json.RawMessage, i int) (FileInfo, error) {
	var fi FileInfo
	what := "files[" + strconv.Itoa(i) + "]"
	obj, err := decodeObject(raw, what)
	if err != nil {
		return fi, err
	}
	if err := reqField(obj, "filename", what, &fi.Filename); err != nil {
		return fi, err
	}
	if err := ValidArchiveName(fi.Filename); err != nil {
		return fi, fmt.Errorf("manifest %s: %w", what, err)
	}
	if len(fi.Filename) > maxNameLen {
		return fi, fmt.Errorf("%w: %s: filename of %d bytes, a file name has at most %d", ErrBadManifest, what, len(fi.Filename), maxNameLen)
	}
	what += " (" + strconv.Quote(fi.Filename) + ")"
	fi.CryptMode = CryptNone
	if _, ok := obj["crypt-mode"]; ok {
		var s string
		if err := reqField(obj, "crypt-mode", what, &s); err != nil {
			return fi, err
		}
		if fi.CryptMode, err = ParseCryptMode(s); err != nil {
			return fi, fmt.Errorf("%w: %s", err, what)
		}
	}
	if err := reqField(obj, "size", what, &fi.Size); err != nil {
		return fi, err
	}
	if fi.Size == 0 && (KindOf(fi.Filename) == KindFixed || KindOf(fi.Filename) == KindDynamic) {
		return fi, fmt.Errorf("%w: %s: size 0 (an index holds at least one chunk)", ErrBadManifest, what)
	}
	var csum string
	if err := reqField(obj, "csum", what, &csum); err != nil {
		return fi, err
	}
	d, err := crypto.ParseDigest(csum)
	if err != nil {
		return fi, fmt.Errorf("%w: %s: csum is not 64 hex digits (a SHA-256)", ErrBadManifest, what)
	}
	fi.Csum = d
	return fi, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// reqField decodes the required key of obj into dst; missing or null is an error.
func reqField(obj map[string]json.RawMessage, key, what string, dst any) error {
	raw, ok := obj[key]
	if !ok {
		return fmt.Errorf("%w: %s: missing %q", ErrBadManifest, what, key)
	}
	if isNull(raw) {
		return fmt.Errorf("%w: %s: %q is null", ErrBadManifest, what, key)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%w: %s: %q: %v", ErrBadManifest, what, key, err)
	}
	return nil
}

// decodeObject splits one JSON object into its members with exact
// (case-sensitive) keys, rejecting duplicate keys and trailing data.
func decodeObject(data []byte, what string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadManifest, what, fmt.Sprintf(format, args...))
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, bad("%v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bad("not a JSON object")
	}
	obj := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("%v", err)
		}
		key := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, bad("value of %q: %v", key, err)
		}
		if _, dup := obj[key]; dup {
			return nil, bad("duplicate key %q", key)
		}
		obj[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("trailing data after the object")
	}
	return obj, nil
}

// KeyFingerprint returns unprotected.key-fingerprint (§6.3, §6.4): ok is
// false when it is absent or null. A value that is not a fingerprint string
// returns ErrBadManifest.
func (m *Manifest) KeyFingerprint() (fp crypto.Fingerprint, ok bool, err error) {
	raw, present := m.Unprotected["key-fingerprint"]
	if !present || isNull(raw) {
		return fp, false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fp, false, fmt.Errorf("%w: unprotected.key-fingerprint is not a string", ErrBadManifest)
	}
	if fp, err = crypto.ParseFingerprint(s); err != nil {
		return fp, false, fmt.Errorf("%w: unprotected.key-fingerprint is not a key fingerprint (32 bytes in hex)", ErrBadManifest)
	}
	return fp, true, nil
}

// snapshotName is "<type>/<id>/<time>" for messages.
func (m *Manifest) snapshotName() string {
	return m.BackupType + "/" + m.BackupID + "/" + FormatTime(m.BackupTime)
}

// Check performs the reader checks of §6.3 against cc (nil = no key):
// if unprotected.key-fingerprint is set, cc == nil gives ErrMissingKey and a
// different key gives ErrWrongKey (both fingerprints named); if the signature
// is non-null and cc is given, it must equal the HMAC recomputed over
// CanonicalSigned (ErrBadSignature). An unsigned manifest is accepted with or
// without a key, and a signature cannot be checked without one; callers
// that require a signature (e.g. for crypt-mode encrypt) must check
// Signature themselves. A malformed fingerprint gives ErrBadManifest.
// No error carries the recomputed signature or any other value derived from
// the key, only its fingerprint.
func (m *Manifest) Check(cc *crypto.Config) error {
	fp, hasFP, err := m.KeyFingerprint()
	if err != nil {
		return fmt.Errorf("manifest of %s: %w", m.snapshotName(), err)
	}
	if hasFP {
		if cc == nil {
			return fmt.Errorf("%w: manifest of %s was written with key %s; no key given",
				ErrMissingKey, m.snapshotName(), fp)
		}
		if got := cc.Fingerprint(); got != fp {
			return fmt.Errorf("%w: manifest of %s was written with key %s, the given key is %s",
				ErrWrongKey, m.snapshotName(), fp, got)
		}
	}
	if m.Signature == nil || cc == nil {
		return nil
	}
	want, err := m.ComputeSignature(cc)
	if err != nil {
		return err
	}
	// The message says only that the signature is wrong: the recomputed
	// HMAC is a valid signature over what the store holds, so printing it
	// would sign an attacker's manifest for them.
	if !hmac.Equal([]byte(*m.Signature), []byte(hex.EncodeToString(want[:]))) {
		return fmt.Errorf("%w: manifest of %s: the signature does not match the given key %s (manifest modified, or signed with another key)",
			ErrBadSignature, m.snapshotName(), cc.Fingerprint().Short())
	}
	return nil
}

// ComputeSignature returns HMAC-SHA256(id_key, CanonicalSigned()) (§6.3).
func (m *Manifest) ComputeSignature(cc *crypto.Config) ([32]byte, error) {
	b, err := m.CanonicalSigned()
	if err != nil {
		return [32]byte{}, err
	}
	return cc.AuthTag(b), nil
}

// Sign sets Signature to the lowercase hex HMAC (§6.3) and
// unprotected.key-fingerprint to cc's full fingerprint (§5.4). Files must
// not change afterwards.
func (m *Manifest) Sign(cc *crypto.Config) error {
	if cc == nil {
		return fmt.Errorf("manifest of %s: Sign needs a key", m.snapshotName())
	}
	sig, err := m.ComputeSignature(cc)
	if err != nil {
		return err
	}
	s := hex.EncodeToString(sig[:])
	m.Signature = &s
	fp, _ := json.Marshal(cc.Fingerprint().String()) // hex and ':' only
	if m.Unprotected == nil {
		m.Unprotected = make(map[string]json.RawMessage)
	}
	m.Unprotected["key-fingerprint"] = fp
	return nil
}

// signedTree is the typed, signed part of the manifest as a generic tree.
func (m *Manifest) signedTree() map[string]any {
	files := make([]any, len(m.Files))
	for i, f := range m.Files {
		cm := f.CryptMode
		if cm == "" {
			cm = CryptNone
		}
		files[i] = map[string]any{
			"crypt-mode": string(cm),
			"csum":       hex.EncodeToString(f.Csum[:]),
			"filename":   f.Filename,
			"size":       f.Size,
		}
	}
	return map[string]any{
		"backup-id":   m.BackupID,
		"backup-time": m.BackupTime,
		"backup-type": m.BackupType,
		"files":       files,
	}
}

// CanonicalSigned returns the bytes the signature covers (§6.3): canonical
// JSON (sorted keys, no whitespace, serde_json string escaping) of
// backup-id, backup-time, backup-type and files (crypt-mode, csum, filename,
// size each; an empty CryptMode is written as "none"). Unknown fields and
// unprotected are never included. It fails only for strings that are not
// valid UTF-8.
func (m *Manifest) CanonicalSigned() ([]byte, error) {
	b, err := appendCanonical(nil, m.signedTree())
	if err != nil {
		return nil, fmt.Errorf("%w: canonical JSON: %v", ErrBadManifest, err)
	}
	return b, nil
}

// Marshal returns the manifest as PBS writes it (§6.1): pretty JSON with
// two-space indentation and sorted keys, "signature" null or the stored
// string, and "unprotected" (values re-encoded with sorted keys; numbers
// kept as written). No trailing newline. Errors wrap ErrBadManifest.
func (m *Manifest) Marshal() ([]byte, error) {
	top := m.signedTree()
	if m.Signature != nil {
		top["signature"] = *m.Signature
	} else {
		top["signature"] = nil
	}
	unprot := make(map[string]any, len(m.Unprotected))
	for k, raw := range m.Unprotected {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: unprotected.%s: %v", ErrBadManifest, k, err)
		}
		unprot[k] = v
	}
	top["unprotected"] = unprot
	b, err := appendPretty(nil, top, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	return b, nil
}

// File returns the entry for archive name (exact match, first one wins). A
// name not listed returns ErrNotInManifest naming the snapshot and the
// archives that are listed.
func (m *Manifest) File(name string) (*FileInfo, error) {
	for i := range m.Files {
		if m.Files[i].Filename == name {
			return &m.Files[i], nil
		}
	}
	names := make([]string, len(m.Files))
	for i, f := range m.Files {
		names[i] = f.Filename
	}
	return nil, fmt.Errorf("%w: %q is not in the manifest of %s (it lists: %s)",
		ErrNotInManifest, name, m.snapshotName(), strings.Join(names, ", "))
}

// VerifyFile compares an archive's recomputed size (bytes) and csum with its
// manifest entry (§6.2), size first: ErrNotInManifest, ErrSizeMismatch or
// ErrCsumMismatch, naming the archive and both values.
func (m *Manifest) VerifyFile(name string, size uint64, csum [32]byte) error {
	fi, err := m.File(name)
	if err != nil {
		return err
	}
	if fi.Size != size {
		return fmt.Errorf("%w: %s in %s: manifest size %d bytes, actual %d bytes",
			ErrSizeMismatch, name, m.snapshotName(), fi.Size, size)
	}
	if fi.Csum != csum {
		return fmt.Errorf("%w: %s in %s: manifest csum %x, actual %x",
			ErrCsumMismatch, name, m.snapshotName(), fi.Csum, csum)
	}
	return nil
}

// AddFile appends an archive entry (for writers). An invalid name
// (ErrBadName) or a name already listed (ErrBadManifest) is refused; an empty
// CryptMode becomes "none".
func (m *Manifest) AddFile(fi FileInfo) error {
	if err := ValidArchiveName(fi.Filename); err != nil {
		return err
	}
	if fi.CryptMode == "" {
		fi.CryptMode = CryptNone
	}
	if _, err := ParseCryptMode(string(fi.CryptMode)); err != nil {
		return err
	}
	for _, f := range m.Files {
		if f.Filename == fi.Filename {
			return fmt.Errorf("%w: %q is already in the manifest of %s", ErrBadManifest, fi.Filename, m.snapshotName())
		}
	}
	m.Files = append(m.Files, fi)
	return nil
}

// Snapshot returns the snapshot this manifest describes, in namespace ns
// (the manifest does not record its namespace).
func (m *Manifest) Snapshot(ns Namespace) Snapshot {
	return Snapshot{NS: ns, Type: m.BackupType, ID: m.BackupID, Time: m.BackupTime}
}
