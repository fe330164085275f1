package filetarget

import (
	"context"
	"errors"
	"os"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/restore"
)

// Sink opens a regular file or block device at Path (Open) with Options,
// for restore.Restore (a restore.Journaled sink): the request's data
// bytes, reserve and resume replace the corresponding options, and once the
// target is locked a device's sector size is checked against the image
// (CheckSectorSize) before the request's Locked runs.
type Sink struct {
	Path    string
	Options Options
}

// String returns the path.
func (s *Sink) String() string { return s.Path }

// Open opens the target (Open).
func (s *Sink) Open(ctx context.Context, req restore.SinkRequest) (restore.Target, error) {
	o := s.Options
	o.DataBytes, o.Reserve, o.Resume = req.DataBytes, req.Reserve, req.Resume
	if o.Note == nil {
		o.Note = req.Note
	}
	o.Locked = func() error {
		if req.CheckImage && req.Head != nil {
			if err := CheckSectorSize(ctx, s.Path, req.Head, s.Options.Force, req.Note); err != nil {
				return err
			}
		}
		if req.Locked != nil {
			return req.Locked()
		}
		return nil
	}
	return Open(s.Path, req.Size, o)
}

// JournalPath returns JournalPath of the target's path.
func (s *Sink) JournalPath() (string, error) { return JournalPath(s.Path) }

// PartialPath returns PartialPath of the target's path.
func (s *Sink) PartialPath() string { return PartialPath(s.Path) }

// Overwrites reports Options.Force.
func (s *Sink) Overwrites() bool { return s.Options.Force }

// State says what is at Path now (restore.TargetState): what is at the
// name (lstat), whether it is or links to a block device (IsDevice), and
// the partial output beside it (lstat of PartialPath).
func (s *Sink) State() restore.TargetState {
	var st restore.TargetState
	fi, err := os.Lstat(s.Path)
	st.Exists = err == nil
	st.Regular = err == nil && fi.Mode().IsRegular()
	st.Missing = errors.Is(err, os.ErrNotExist)
	st.Device = IsDevice(s.Path)
	pi, err := os.Lstat(s.PartialPath())
	st.PartialSeen = err == nil
	st.PartialGone = errors.Is(err, os.ErrNotExist)
	if err == nil {
		st.PartialRegular, st.PartialSize = pi.Mode().IsRegular(), pi.Size()
	}
	return st
}

// Same reports whether the regular file at Path (links followed) is the
// one the completion record c describes (TargetIdentity).
func (s *Sink) Same(c restore.Completion) bool {
	st, err := os.Stat(s.Path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	id, err := TargetIdentity(f)
	return err == nil && id.Same(c)
}

// CheckExisting reads the existing regular file or block device at Path
// back against plan (CheckFile).
func (s *Sink) CheckExisting(ctx context.Context, plan *restore.Plan, cc *crypto.Config, jobs int) (restore.FileCheck, error) {
	return CheckFile(ctx, s.Path, plan, cc, jobs)
}

var _ restore.Journaled = (*Sink)(nil)

var (
	_ restore.Allocator    = (*Target)(nil)
	_ restore.DirectWriter = (*Target)(nil)
	_ restore.Committer    = (*Target)(nil)
	_ restore.ReadBacker   = (*Target)(nil)
	_ restore.Identified   = (*Target)(nil)
	_ restore.ZeroReporter = (*Target)(nil)
	_ restore.Remover      = (*Target)(nil)
)
