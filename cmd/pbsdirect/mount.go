package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/index"
)

// cmdMount mounts a snapshot's archives as read-only files with FUSE until
// interrupted (Ctrl-C, SIGTERM) or unmounted from outside; pxar archives
// show as directories (mountFiles).
func cmdMount(fs *flag.FlagSet) commandFunc {
	var af accessFlags
	af.register(fs)
	allowOther := fs.Bool("allow-other", false, "let other users read the mount (non-root users need user_allow_other in /etc/fuse.conf)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() != 2 {
			return usagef("want SNAPSHOT MOUNTPOINT, got %d argument(s)", fs.NArg())
		}
		if err := af.check(); err != nil {
			return err
		}
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
		dir := fs.Arg(1)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usagef("MOUNTPOINT %s: not an existing directory", dir)
		}
		sa, err := af.open(ctx, fs.Arg(0), false, true, stderr, "mount")
		if err != nil {
			return err
		}
		defer sa.Close()
		files := mountFiles(sa.Names, sa.Readers, sa.when, stderr)
		for _, b := range sa.Blobs {
			files = append(files, fusefs.File{Name: archive.FileName(b.Name), Size: int64(len(b.Data)), Data: strings.NewReader(string(b.Data)), ModTime: sa.when})
		}
		m, err := fusefs.New(dir, files, fusefs.Options{
			FsName:     "pbsdirect:" + sa.snap.String(),
			AllowOther: *allowOther,
			Log:        func(msg string) { fmt.Fprintf(stderr, "pbsdirect mount: %s\n", index.DisplayText(msg)) },
		})
		if err != nil {
			if errors.Is(err, fusefs.ErrUnavailable) {
				return fmt.Errorf("%w (apt-get install fuse3; in a container, pass --device /dev/fuse --cap-add SYS_ADMIN)", err)
			}
			return err
		}
		// In a JSON format stdout carries only the JSON result (at the end):
		// what is served, and how it went, is said on stderr.
		info := stdout
		if outputJSON(stdout) {
			info = stderr
		}
		fmt.Fprintf(info, "mounted %s read-only at %s:", sa.snap, dir)
		for _, f := range files {
			slash := ""
			if f.Node != nil {
				slash = "/"
			}
			fmt.Fprintf(info, " %s%s", index.DisplayText(f.Name), slash)
		}
		fmt.Fprintln(info, "\n  press Ctrl-C (or send SIGTERM) to unmount")
		unmounted := make(chan struct{})
		go func() { m.Wait(); close(unmounted) }()
		select {
		case <-unmounted:
			fmt.Fprintf(info, "%s was unmounted\n", dir)
			sa.report(info)
			return nil
		case <-ctx.Done():
		}
		if err := m.Unmount(); err != nil {
			// Busy (a loop device or a shell still uses it): detach it now; the
			// kernel frees it when the last user goes.
			fmt.Fprintf(stderr, "pbsdirect mount: unmount %s: %s; detaching it lazily (it goes when its last user does)\n", dir, index.DisplayText(strings.Join(strings.Fields(err.Error()), " ")))
			if err := m.Detach(); err != nil {
				return fmt.Errorf("unmount %s: %w (run fusermount3 -u -z %s)", dir, err, dir)
			}
		}
		<-unmounted
		fmt.Fprintf(info, "unmounted %s\n", dir)
		sa.report(info)
		return nil
	}
}

// mountCommand is 'pbsdirect mount'.
func mountCommand() commandSpec {
	return commandSpec{
		use:   "mount [flags] SNAPSHOT MOUNTPOINT",
		short: "mount a snapshot's archives as read-only files (FUSE), no restore needed",
		long: `Mount a snapshot's archives as read-only files (FUSE) at MOUNTPOINT: chunks are
read, checked and cached as the files are read; nothing is restored first.
A pxar archive (a container or host backup, legacy or split) shows as a
directory, NAME.pxar/, with its files, attributes, symlinks and xattrs:
reading a file fetches only its chunks.
Stops on unmount, SIGINT or SIGTERM (exit 0).`,
		example: `  pbsdirect mount --store /mnt/ds vm/100 /mnt/vm100 &
  qemu-img convert -O qcow2 /mnt/vm100/drive-scsi0.img /var/tmp/vm100.qcow2; fusermount -u /mnt/vm100
  pbsdirect mount --store /mnt/ds ct/200 /mnt/ct200 &
  cp /mnt/ct200/root.pxar/etc/hosts /tmp/; fusermount -u /mnt/ct200`,
		build:    cmdMount,
		complete: completeSnapshot,
	}
}
