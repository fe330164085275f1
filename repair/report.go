package repair

// Report is the outcome of a repair run, as `pbsdirect repair` prints it
// (text) or writes it (JSON).
type Report struct {
	Primary   string   `json:"primary"`
	From      []string `json:"from"`
	DryRun    bool     `json:"dry-run,omitempty"`
	Snapshots int      `json:"snapshots"` // snapshots in scope
	Counts
	// Files counts the snapshot files (manifests, indexes, blobs) checked.
	Files FileCounts `json:"files"`
	// Items are the snapshot files the primary lacked or held damaged, in
	// the order of the snapshots, then the chunks, sorted by digest: the
	// first Options.MaxListed (Counts.Unlisted counts the rest).
	Items []Item `json:"items"`
	// Errors name the snapshots and archives whose chunk list could not
	// be read from any store (their chunks were not checked).
	Errors []string `json:"errors,omitempty"`
	// KeyMissing are the snapshots not repaired for want of their key
	// (KeyMissingError): nothing of them was checked or copied.
	KeyMissing []KeyMissing `json:"key-missing,omitempty"`
	// CRCOnlyWarning is set when chunks were checked by structure and
	// CRC only (Counts.CRCOnly): a forged copy cannot be excluded.
	CRCOnlyWarning string `json:"crc-only-warning,omitempty"`
	// Interrupted is set when the run was interrupted (SIGINT, SIGTERM):
	// the counts and items are what was done before.
	Interrupted bool `json:"interrupted,omitempty"`
	OK          bool `json:"ok"`
	ExitCode    int  `json:"exit-code"`
}

// KeyMissing is a snapshot not repaired for want of its key, as verify
// reports one.
type KeyMissing struct {
	Snapshot string `json:"snapshot"`
	// Status is "key-missing" or "key-mismatch" (snapshot.KeyMissing,
	// snapshot.KeyMismatch).
	Status string `json:"status"`
	// KeyFingerprint is the fingerprint the manifest names ("" when none).
	KeyFingerprint string `json:"key-fingerprint,omitempty"`
	Error          string `json:"error"`
}
