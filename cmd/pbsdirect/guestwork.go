package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// checkNotWorkFile refuses (a usage error, exit 2) a path given as a
// target (what names it: "--map drive-scsi1", "--config") that is a
// restore's working file: the partial output or the journal of one of
// this run's disks (archives[i] goes to targets[i]), named so, or any
// file named as such (filetarget.WorkFileKind). Writing one would take
// over that restore's work.
func checkNotWorkFile(what, path string, archives, targets []string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	for i, t := range targets {
		if filetarget.IsDevice(t) {
			continue // its journal lives in the journal directories, named for it
		}
		partial, journal := filetarget.WorkFiles(t)
		kind := ""
		switch abs {
		case partial:
			kind = "partial output"
		case journal, journal + ".new":
			kind = "journal"
		}
		if kind != "" {
			return usagef("%s %s is the %s of disk %s (restored to %s): give a path of its own", what, index.DisplayText(path), kind,
				index.DisplayText(archives[i]), index.DisplayText(t))
		}
	}
	if kind := filetarget.WorkFileKind(path); kind != "" {
		return usagef("%s %s is named as the %s of a restore (pbsdirect's own working file): give a path of its own", what, index.DisplayText(path), kind)
	}
	return nil
}

// configError is err, an error writing (or checking) the guest's
// configuration at path, said as the configuration's: its path once,
// whether err names it already or not.
func configError(path string, err error) error {
	name := index.DisplayText(path)
	if strings.HasPrefix(err.Error(), name+": ") {
		return fmt.Errorf("configuration %w", err)
	}
	return fmt.Errorf("configuration %s: %w", name, err)
}

// configNotWritten says why the guest's configuration was not written
// when its disks' restore ended with err: interrupted or failed (a rerun
// with --resume continues the disks and writes it), or a disk restored
// with damage (a rerun once the store is repaired).
func configNotWritten(ctx context.Context, err error) string {
	var de *restore.DamagedError
	switch {
	case ctx.Err() != nil:
		return "the restore was interrupted (rerun with --resume)"
	case errors.As(err, &de) && de.Zeroed:
		return "a disk was restored with damage (written as zeros); it is written once every disk restores whole"
	}
	return "disk restore failed (rerun with --resume)"
}
