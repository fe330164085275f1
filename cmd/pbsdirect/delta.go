package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// deltaFlags are the flags of a differential restore (restore,
// restore-guest): --base, --verify-base, --in-place.
type deltaFlags struct {
	base       *string
	verifyBase *bool
	inPlace    *bool
}

// registerDeltaFlags adds the differential restore's flags to fs.
func registerDeltaFlags(fs *flag.FlagSet) *deltaFlags {
	return &deltaFlags{
		base:       fs.String("base", "", "SNAPSHOT|auto: the target holds the same archive of this older snapshot (auto: the one pbsdirect recorded restoring into it); only positions whose digest changed are fetched and written, positions that became zero are zeroed; refused (exit 2) unless the target's record vouches for it (a completed restore of that snapshot, the target unchanged since) or --verify-base is given; implies --force"),
		verifyBase: fs.Bool("verify-base", false, "with --base: trust no record; read back and hash each range of the target that --base would skip, and skip only those matching the base"),
		inPlace:    fs.Bool("in-place", false, "the target holds an unknown older copy: read and hash each chunk range of it and fetch and write only those that differ from the index; implies --force"),
	}
}

// active reports whether a differential restore was asked for.
func (df *deltaFlags) active() bool {
	return df != nil && (*df.base != "" || *df.inPlace)
}

// check validates the flags against resume; errors are usage errors.
func (df *deltaFlags) check(resume bool) error {
	switch {
	case *df.verifyBase && *df.base == "":
		return usagef("--verify-base verifies the base that --base names: give --base SNAPSHOT|auto")
	case *df.base != "" && *df.inPlace:
		return usagef("--base names what the target holds, --in-place reads it to find out: give one")
	case df.active() && resume:
		return usagef("--resume continues a stopped restore; --base and --in-place restore only what differs: give one")
	case *df.base != "" && *df.base != "auto":
		return checkSnapshotRef(*df.base)
	}
	return nil
}

// options returns the restore.Delta the flags ask for, nil for none; the
// base snapshot is resolved in store (keys open it), --base auto from the
// record of the restore into sink (or sinks, a guest's: the first that
// has one).
func (df *deltaFlags) options(ctx context.Context, store chunkstore.Store, ns index.Namespace, keys *snapshot.Keys, sinks []restore.Sink, stderr io.Writer) (*restore.Delta, error) {
	if !df.active() {
		return nil, nil
	}
	if *df.inPlace {
		return &restore.Delta{InPlace: true}, nil
	}
	ref := *df.base
	if ref == "auto" {
		var errs []error
		for _, s := range sinks {
			rec, err := restore.TargetRecord(s)
			if err == nil {
				ref = rec.Snapshot
				break
			}
			errs = append(errs, err)
		}
		if ref == "auto" {
			if errors.Is(errors.Join(errs...), os.ErrNotExist) {
				return nil, usagef("--base auto: pbsdirect has no record of a restore into %s: give --base SNAPSHOT (with --verify-base), or --in-place", index.DisplayText(sinks[0].String()))
			}
			return nil, fmt.Errorf("--base auto: %w", errors.Join(errs...))
		}
		fmt.Fprintf(stderr, "pbsdirect: note: --base auto: %s holds %s, as recorded\n", index.DisplayText(sinks[0].String()), index.DisplayText(ref))
	}
	snap, err := snapshot.Resolve(ctx, store, ns, ref)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", index.DisplayText(ref), err)
	}
	base, err := snapshot.OpenSnapshot(ctx, store, snap, keys)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", index.DisplayText(ref), err)
	}
	return &restore.Delta{Base: base, VerifyBase: *df.verifyBase}, nil
}

// printDelta says in the text summary what a differential restore left
// out.
func printDelta(w io.Writer, d *restore.DeltaResult) {
	if d == nil {
		return
	}
	how := "in place, every range read back"
	switch d.Mode {
	case "base":
		how = "onto " + index.DisplayText(d.Base) + ", as recorded"
	case "base-verified":
		how = "onto " + index.DisplayText(d.Base) + ", its ranges read back"
	}
	fmt.Fprintf(w, "  differential (%s): %d of %d chunk positions skipped (%s), %d written; %d read back (%s), %s of zero ranges zeroed, %s left zero\n",
		how, d.Skipped, d.Positions, humanBytes(d.SkippedBytes), d.Written, d.Checked, humanBytes(d.ReadBytes), humanBytes(d.ZeroedBytes), humanBytes(d.ZeroKeptBytes))
}

// zeroBytesWords says the bytes of sum's zero chunks: a differential
// restore's are those of the whole image's zero ranges and, of them, the
// bytes it zeroed (sum.ZeroBytes: the rest was zero already).
func zeroBytesWords(sum *restore.Summary) string {
	d := sum.Delta
	if d == nil {
		return humanBytes(sum.ZeroBytes)
	}
	return fmt.Sprintf("%s, of which %s", humanBytes(d.ZeroedBytes+d.ZeroKeptBytes), humanBytes(sum.ZeroBytes))
}
