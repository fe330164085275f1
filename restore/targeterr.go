package restore

import "errors"

// The errors below say why a target cannot be opened or written, whatever
// its kind: a target package (filetarget) wraps them, and the command maps
// them to exit codes without knowing the kind.

// ErrTargetExists is returned by a target's opening for an existing regular file
// without filetarget.Options.Force.
var ErrTargetExists = errors.New("target exists (use --force to overwrite)")

// ErrTargetBusy is wrapped by target errors for a target
// that another process is writing (its lock is held, or a block device is
// held open exclusively).
var ErrTargetBusy = errors.New("target is in use")

// ErrTargetSymlink is wrapped by target errors for a
// TARGET that is a symbolic link to a file (or a dangling one) when
// following links was not asked for.
var ErrTargetSymlink = errors.New("target is a symbolic link")

// ErrTargetUnusable is matched (errors.Is) by target errors for a target that cannot take the restore as named, whatever the
// data: a missing directory or one that is not a directory, a path that
// is a directory, FIFO or character device, a block device smaller than
// the image. The message is not changed by it. Like ErrTargetExists,
// ErrTargetSymlink, ErrTargetFormat and ErrTargetInStore, it is a usage
// mistake (exit 2), unlike ErrTargetBusy, ErrTargetInUse and ErrNoSpace.
var ErrTargetUnusable = errors.New("target cannot be used")

// Unusable marks err as ErrTargetUnusable, keeping its message: the
// target cannot take the restore as named (a usage mistake, exit 2).
func Unusable(err error) error { return unusableError{err} }

type unusableError struct{ error }

func (e unusableError) Unwrap() error { return e.error }

func (e unusableError) Is(target error) bool { return target == ErrTargetUnusable }

// ErrTargetFormat is wrapped by target errors for an existing target
// that holds a disk-image container or an encrypted volume (qcow2, VMDK,
// VHD, VHDX, VDI, QED, LUKS): raw bytes written over it would destroy it.
var ErrTargetFormat = errors.New("target holds a disk image format")

// ErrTargetInUse is wrapped by target errors for a regular file that
// backs a loop device (a mounted file system image, or an attached disk),
// and for a target another program holds byte-range (fcntl/OFD) locks on,
// as QEMU does on the disks of a running guest.
var ErrTargetInUse = errors.New("target file is in use as a loop device's backing file")

// ErrNoSpace is wrapped by target errors when the target's file system
// has less free space than the image's data needs (found before anything
// is written).
var ErrNoSpace = errors.New("not enough free space")

// ErrTargetInStore is wrapped by target errors for a
// target inside the datastore directory being read (filetarget.Options.StoreDir),
// or a hard link of one of its files: writing it would destroy the backup.
var ErrTargetInStore = errors.New("target is part of the datastore")
