package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/nbd"
)

// cmdServeNBD serves a snapshot's disk images read-only over NBD until
// interrupted.
func cmdServeNBD(fs *flag.FlagSet) commandFunc {
	var af accessFlags
	af.register(fs)
	socket := fs.String("socket", "", "Unix socket to listen on (default: $XDG_RUNTIME_DIR/pbsdirect-nbd.sock, else /tmp/pbsdirect-nbd-UID.sock)")
	listen := fs.String("listen", "", "TCP address to listen on instead, e.g. 127.0.0.1:10809 (loopback only unless --allow-remote)")
	allowRemote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback (NBD has no authentication here: anyone who reaches it reads the images)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() != 1 {
			return usagef("want SNAPSHOT, got %d argument(s)", fs.NArg())
		}
		if err := af.check(); err != nil {
			return err
		}
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
		if *listen != "" && *socket != "" {
			return usagef("give --socket or --listen, not both")
		}
		if *listen != "" && !*allowRemote {
			if err := checkLoopback(*listen); err != nil {
				return err
			}
		}
		sa, err := af.open(ctx, fs.Arg(0), true, false, stderr, "serve-nbd")
		if err != nil {
			return err
		}
		defer sa.Close()
		if len(sa.Readers) == 0 {
			return fmt.Errorf("snapshot %s has no disk image (.img.fidx) to serve", sa.snap)
		}
		srv := &nbd.Server{Exports: nbdExports(sa), Log: func(msg string) { fmt.Fprintf(stderr, "pbsdirect serve-nbd: %s\n", index.DisplayText(msg)) }}
		var l net.Listener
		var uri func(name string) string
		if *listen != "" {
			if l, err = net.Listen("tcp", *listen); err != nil {
				return err
			}
			addr := l.Addr().String()
			uri = func(name string) string { return "nbd://" + addr + "/" + url.PathEscape(name) }
		} else {
			path := *socket
			if path == "" {
				path = defaultSocket()
			}
			if l, err = listenUnix(path); err != nil {
				return err
			}
			uri = func(name string) string { return "nbd+unix:///" + url.PathEscape(name) + "?socket=" + path }
		}
		// In a JSON format stdout carries only the JSON result (at the end):
		// what is served, and how it went, is said on stderr.
		info := stdout
		if outputJSON(stdout) {
			info = stderr
		}
		fmt.Fprintf(info, "serving %s read-only over NBD; Ctrl-C (or SIGTERM) stops\n", sa.snap)
		for _, e := range srv.Exports {
			fmt.Fprintf(info, "  %s  %s (%s)\n", index.DisplayText(uri(e.Name)), index.DisplayText(e.Description), humanBytes(uint64(e.Size)))
		}
		if f, ok := info.(*os.File); ok {
			f.Sync()
		}
		err = srv.Serve(ctx, l)
		fmt.Fprintf(info, "stopped serving %s\n", sa.snap)
		sa.report(info)
		return err
	}
}

// nbdExports returns an NBD export of each disk image of sa, named as the
// archive without .img.fidx (archive.ExportName).
func nbdExports(sa *snapshotAccess) []nbd.Export {
	var out []nbd.Export
	for i, r := range sa.Readers {
		out = append(out, nbd.Export{
			Name:               archive.ExportName(sa.Names[i]),
			Description:        sa.snap.String() + "/" + sa.Names[i],
			Size:               r.Size(),
			Data:               r,
			Extents:            nbdExtents(r),
			PreferredBlockSize: uint32(min(max(r.ChunkSize(), 4096), 32<<20)),
		})
	}
	return out
}

// nbdExtents adapts the reader's zero extents for base:allocation.
func nbdExtents(r *archive.Reader) func(off, length int64) []nbd.Extent {
	return func(off, length int64) []nbd.Extent {
		ext := r.Extents(off, length)
		out := make([]nbd.Extent, len(ext))
		for i, e := range ext {
			out[i] = nbd.Extent{Offset: e.Offset, Length: e.Length, Zero: e.Zero}
		}
		return out
	}
}

// checkLoopback refuses a TCP listen address that is not a loopback IP or
// "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: %v (want HOST:PORT)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usagef("--listen %s is not a loopback address: NBD has no authentication here; add --allow-remote to serve it anyway", addr)
}

// defaultSocket is $XDG_RUNTIME_DIR/pbsdirect-nbd.sock, else
// /tmp/pbsdirect-nbd-UID.sock.
func defaultSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "pbsdirect-nbd.sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("pbsdirect-nbd-%d.sock", os.Getuid()))
}

// listenUnix listens on the Unix socket path, replacing a stale socket
// that nobody answers on (never any other kind of file). The socket file
// is removed when the listener closes.
func listenUnix(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("--socket %s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("--socket %s: another server listens there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return l, nil
}

// serveNbdCommand is 'pbsdirect serve-nbd'.
func serveNbdCommand() commandSpec {
	return commandSpec{
		use:   "serve-nbd [flags] SNAPSHOT",
		short: "serve a snapshot's disk images read-only over NBD (qemu-img, nbdcopy, QEMU)",
		long: `Serve a snapshot's disk images read-only over NBD (one export per image, named
as the archive without .img.fidx) on a Unix socket or, with --listen, TCP.
Stops on SIGINT or SIGTERM (exit 0).`,
		example: `  pbsdirect serve-nbd --store /mnt/ds vm/100 &
  qemu-img info "nbd+unix:///drive-scsi0?socket=$XDG_RUNTIME_DIR/pbsdirect-nbd.sock"`,
		build:    cmdServeNBD,
		complete: completeOneSnapshot,
	}
}
