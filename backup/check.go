package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// ErrRefused is matched by the errors of the checks made before a backup
// writes anything (CheckSources, CheckOrder) that the command line must
// change to avoid: a source that is not there or cannot be an image, a
// snapshot time not after the group's last.
var ErrRefused = errors.New("backup refused")

// refusal is an ErrRefused error: it says msg and unwraps to its cause,
// when it has one.
type refusal struct {
	msg string
	err error
}

// Error returns the message.
func (e *refusal) Error() string { return e.msg }

// Unwrap returns the cause, or nil.
func (e *refusal) Unwrap() error { return e.err }

// Is matches ErrRefused.
func (e *refusal) Is(target error) bool { return target == ErrRefused }

// CheckSources checks, before anything is written, that each source's
// path is there and is a regular file or a block device (a FIFO or a
// character device would be read without end, or waited on), or for a
// ".pxar" source a directory (a symlink to one is followed, that one
// only: the pxar archive holds the directory it names). A path that
// is not there, or is something else, is ErrRefused; another stat error is
// returned naming the source.
func CheckSources(sources []Source) error {
	for _, s := range sources {
		st, err := os.Stat(s.Path)
		if err != nil {
			err = fmt.Errorf("backup source %s: %w (nothing written)", s.Name, err)
			if errors.Is(err, os.ErrNotExist) {
				err = &refusal{msg: err.Error(), err: err} // a path mistyped, not data missing
			}
			return err
		}
		if strings.HasSuffix(s.Name, ".pxar") {
			if !st.IsDir() {
				kind := outfile.Kind(st.Mode())
				if st.Mode().IsRegular() {
					kind = "is a regular file"
				}
				return &refusal{msg: fmt.Sprintf("backup source %s: %s %s, not a directory (nothing written)", s.Name, s.Path, kind)}
			}
			continue
		}
		if m := st.Mode(); !m.IsRegular() && (m&os.ModeDevice == 0 || m&os.ModeCharDevice != 0) {
			return &refusal{msg: fmt.Sprintf("backup source %s: %s %s, not a regular file or block device (nothing written)", s.Name, s.Path, outfile.Kind(m))}
		}
	}
	return nil
}

// CheckOrder refuses, like PBS, a snapshot snap that is not newer than its
// group's last one in store; for a snapshot without a time (snap.Time 0:
// it is taken at now, Unix seconds), one whose group's last snapshot lies
// in the future. A snapshot that is already there (same group and time)
// is ErrSnapshotExists, not a refusal: nothing on the command line is
// wrong, the store already holds it. The same second taken by another
// backup running now is left to the snapshot claim. Refusals are
// ErrRefused; store errors are returned as they are.
func CheckOrder(ctx context.Context, store chunkstore.Store, snap index.Snapshot, now int64) error {
	existing, err := snapshot.List(ctx, store, snap.NS)
	if err != nil {
		return err
	}
	var last *index.Snapshot
	for i, e := range existing {
		if e.Snapshot.Type != snap.Type || e.Snapshot.ID != snap.ID {
			continue
		}
		if snap.Time != 0 && e.Snapshot.Time == snap.Time {
			return fmt.Errorf("snapshot %s in %s: %w (give a later --backup-time)", &existing[i].Snapshot, store, ErrSnapshotExists)
		}
		if last == nil || e.Snapshot.Time > last.Time {
			last = &existing[i].Snapshot
		}
	}
	switch {
	case last == nil:
	case snap.Time != 0 && last.Time >= snap.Time:
		return &refusal{msg: fmt.Sprintf("--backup-time %s is not after the group's last snapshot %s: PBS keeps a group's snapshots in time order", index.FormatTime(snap.Time), last)}
	case snap.Time == 0 && last.Time > now:
		return &refusal{msg: fmt.Sprintf("the group's last snapshot %s is in the future (now is %s): PBS keeps a group's snapshots in time order; check the clock, or give --backup-time after it", last, index.FormatTime(now))}
	}
	return nil
}

// CheckCrypt applies the crypt mode mode (--crypt-mode: "", "none",
// "encrypt" or "sign-only") to key, the key given or found (nil: none),
// and returns the key the backup uses (nil for none) and whether it only
// signs. withMaster says an RSA master public key is to store the key
// (--master-pubkey-file): it needs encryption. A mode that is not one of
// those, or that needs a key there is not, is ErrRefused.
func CheckCrypt(mode string, key *crypto.Config, withMaster bool) (*crypto.Config, bool, error) {
	signOnly := false
	switch mode {
	case "":
	case "none":
		key = nil
	case "encrypt", "sign-only":
		if key == nil {
			return nil, false, &refusal{msg: fmt.Sprintf("--crypt-mode %s needs --keyfile", mode)}
		}
		signOnly = mode == "sign-only"
	default:
		return nil, false, &refusal{msg: fmt.Sprintf("--crypt-mode must be none, encrypt or sign-only, not %q", mode)}
	}
	if withMaster && (key == nil || signOnly) {
		return nil, false, &refusal{msg: "--master-pubkey-file goes with encryption: give --keyfile (or have a default key) and no --crypt-mode none or sign-only"}
	}
	return key, signOnly, nil
}
