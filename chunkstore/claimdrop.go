package chunkstore

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dropUnfinished removes the snapshot directory name of the locked group
// directory g when it has no manifest (index.json.blob): the files in it
// (written by the claim's holder, which created it), then the directory.
// With groupNew (the claim created g) an empty g is removed too. Errors
// name the directory; a manifest present leaves everything as it is.
func dropUnfinished(g interface {
	Fd() uintptr
	Name() string
}, name string, groupNew bool) error {
	gfd := int(g.Fd())
	var st unix.Stat_t
	if err := unix.Fstatat(gfd, name+"/index.json.blob", &st, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
		return nil // finished (or not knowable): kept
	}
	snap := filepath.Join(g.Name(), name)
	sfd, err := unix.Openat(gfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("remove unfinished snapshot %s: %w", snap, err)
	}
	names, err := readDirNames(sfd)
	for _, n := range names {
		if uerr := unix.Unlinkat(sfd, n, 0); uerr != nil && err == nil {
			err = fmt.Errorf("remove %s: %w", filepath.Join(snap, n), uerr)
		}
	}
	unix.Close(sfd)
	if err != nil {
		return fmt.Errorf("remove unfinished snapshot %s: %w", snap, err)
	}
	if err := unix.Unlinkat(gfd, name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("remove unfinished snapshot %s: %w", snap, err)
	}
	if !groupNew {
		return nil
	}
	pfd, err := unix.Openat(gfd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(pfd)
	// Not empty (another snapshot or an owner file meanwhile): kept.
	unix.Unlinkat(pfd, filepath.Base(g.Name()), unix.AT_REMOVEDIR)
	return nil
}

// readDirNames lists the entries of the open directory fd (without "." and
// "..").
func readDirNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return names, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
