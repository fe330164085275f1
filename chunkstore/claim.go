package chunkstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"time"
)

// ErrSnapshotBusy is wrapped by ClaimSnapshot errors when another writer
// holds the snapshot's group (a directory store's group lock) or is writing
// the snapshot (a bucket's claim marker exists).
var ErrSnapshotBusy = errors.New("snapshot group is locked by another backup")

// SnapshotClaimer is implemented by every store that backups write to: it
// lets one backup at a time write a snapshot, so that two concurrent
// backups of one group never both succeed.
type SnapshotClaimer interface {
	// ClaimSnapshot claims the snapshot directory snapDir (datastore-
	// relative, "vm/100/<time>" or with a namespace prefix) for one writer
	// until release is called. A directory store takes the group's lock as
	// PBS writers take it (flock on the group directory, §1.5) and creates
	// the snapshot directory; a bucket creates the claim marker
	// ClaimMarker with a conditional write (S3 If-None-Match: *, GCS
	// DoesNotExist) and release deletes it. A claim held elsewhere returns
	// an error wrapping ErrSnapshotBusy. Whether the snapshot already has a
	// manifest is for the caller to check after claiming.
	ClaimSnapshot(ctx context.Context, snapDir string) (release func() error, err error)
}

// ClaimMarker is the name of a bucket snapshot's claim marker, an object in
// the snapshot's prefix that exists only while a backup writes it.
const ClaimMarker = ".pbsdirect-writer"

// ClaimInfo is the content of a claim marker (JSON), said in the message of
// a refused claim.
type ClaimInfo struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Started string `json:"started"` // RFC 3339, UTC
	Nonce   string `json:"nonce"`   // random, tells this claim from any other
}

// NewClaimMarker returns the content of a new claim's marker: this host,
// process and time, and a random nonce, so that no two claims write the
// same bytes.
func NewClaimMarker() []byte {
	host, _ := os.Hostname()
	b, _ := json.Marshal(ClaimInfo{Host: host, PID: os.Getpid(), Started: time.Now().UTC().Format(time.RFC3339), Nonce: rand.Text()})
	return b
}

// ClaimBusyError describes a refused bucket claim; marker is what the
// marker object holds (nil when unread), where names it.
func ClaimBusyError(snapDir, where string, marker []byte) error {
	var ci ClaimInfo
	who := "another backup"
	if len(marker) > 0 && len(marker) < 4096 && json.Unmarshal(marker, &ci) == nil && ci.PID > 0 {
		who = fmt.Sprintf("a backup on host %q (PID %d, started %s)", ci.Host, ci.PID, ci.Started)
	}
	return fmt.Errorf("snapshot %s: %w: %s is writing it (claim %s; if no backup is running, a killed one left it: delete it)",
		path.Clean(snapDir), ErrSnapshotBusy, who, where)
}
