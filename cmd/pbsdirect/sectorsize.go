package main

import (
	"context"
	"fmt"
	"io"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
)

// checkSectorSize compares the sector size the image's GPT was written for
// (restore.PartitionSectorSize of its first bytes, read and checked from
// the store) with the logical sector size of a block device target: on a
// mismatch the partition table is not found on that device, so the
// restore is refused (restore.SectorSizeMismatch, exit 2) or, with
// --force, a warning is said on stderr. A file target, an image without a
// GPT, a resume and a first chunk that cannot be read (the restore itself
// reports it) pass.
func (rc *restoreCmd) checkSectorSize(ctx context.Context, store chunkstore.Store, plan *restore.Plan, encrypted bool, key *crypto.Config, targetPath string, stderr io.Writer) error {
	if *rc.resume {
		return nil // checked when the restore began
	}
	devSS, err := restore.DeviceSectorSize(targetPath)
	if err != nil || devSS == 0 {
		return nil // not a device, or OpenTarget says why
	}
	head, err := restore.ImageHead(ctx, store, plan, restore.HeadBytes, encrypted, key)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	imgSS := restore.PartitionSectorSize(head)
	if imgSS == 0 || imgSS == devSS {
		return nil
	}
	err = restore.SectorSizeMismatch(targetPath, imgSS, devSS)
	if !*rc.force {
		return err
	}
	fmt.Fprintf(stderr, "pbsdirect: warning: --force: writing anyway: %s\n", index.DisplayText(err.Error()))
	return nil
}
