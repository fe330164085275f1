package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/pxartar"
	"github.com/pbsdirect/pbsdirect/restore"
)

// Stream formats of restore … ARCHIVE.pxar - (--format).
const (
	streamPxar = "pxar"
	streamTar  = "tar"
)

// restoreFormat holds restore's --format: how a pxar archive is written
// to standard output.
type restoreFormat struct {
	format *string
}

// registerRestoreFormat adds --format to restore's flags.
func registerRestoreFormat(fs *flag.FlagSet) *restoreFormat {
	return &restoreFormat{format: fs.String("format", streamPxar, "with a pxar archive (.pxar) and TARGET -: tar writes a POSIX (PAX) tar stream of its files (xattrs, ACLs, capabilities as GNU tar --xattrs --acls reads them), for tar -x or pct restore; pxar writes the raw archive stream (legacy archives only), also to a file TARGET instead of extracting into a directory")}
}

// dispatch runs restore SNAPSHOT ARCHIVE - for a pxar archive (the raw
// stream or a tar stream) and refuses --format where it does not apply.
// handled is false when the command is none of its business.
func (rf *restoreFormat) dispatch(ctx context.Context, rc *restoreCmd, fs *flag.FlagSet, stdout, stderr io.Writer) (handled bool, err error) {
	name := index.NormalizeArchiveName(fs.Arg(1))
	isPxar := archive.IsPxar(name)
	if fs.Changed("format") {
		switch {
		case *rf.format != streamPxar && *rf.format != streamTar:
			return true, usagef("--format %q: want tar or pxar", *rf.format)
		case !isPxar:
			return true, usagef("--format applies to pxar archives (.pxar), not to %s", index.DisplayText(name))
		case fs.Arg(2) != "-" && *rf.format == streamTar:
			return true, usagef("--format tar applies to TARGET - (standard output); a directory TARGET is extracted into")
		case fs.Arg(2) != "-":
			return false, nil // --format pxar: the raw stream into a file, as any .didx archive
		}
	}
	stream := isPxar && (fs.Arg(2) == "-" || fs.Changed("format"))
	if stream {
		for _, f := range []string{"include", "map-ids", "same-owner", "numeric-owner"} {
			if fs.Changed(f) {
				return true, usagef("--%s applies to a pxar archive extracted into a directory, not to a stream (TARGET - or --format): extract into a directory, or filter the tar stream with tar itself", f)
			}
		}
	}
	if !isPxar || fs.Arg(2) != "-" {
		return false, nil
	}
	return true, rc.pxarToStdout(ctx, fs.Arg(0), name, *rf.format, stdout, stderr)
}

// pxarToStdout writes pxar archive name of snapshot ref to stdout: the
// raw stream of a legacy archive (format pxar), or a tar stream of its
// files (format tar, legacy or split). A split archive's raw streams are
// refused (usage error): neither is an archive on its own.
func (rc *restoreCmd) pxarToStdout(ctx context.Context, ref, name, format string, stdout, stderr io.Writer) error {
	start := time.Now()
	src, opts, done, err := rc.stdoutSource(ctx, ref, stderr)
	if err != nil {
		return err
	}
	defer done()
	snap := src.Snapshot()
	meta, payload, ok := archive.PxarNames(src.Manifest(), name)
	if !ok {
		_, err := archive.OpenPxar(ctx, src, name, archive.Options{}) // names what the snapshot holds
		return usagef("%v", err)
	}
	if format == streamPxar {
		if payload != "" {
			return usagef("%s/%s is a split archive (%s + %s): neither raw stream is an archive on its own; give --format tar for a tar stream of its files",
				snap, index.DisplayText(name), meta, payload)
		}
		return rc.copyToStdout(ctx, src, meta, opts, start, stdout, stderr)
	}
	px, err := archive.OpenPxar(ctx, src, meta, opts)
	if err != nil {
		return pxarError(err)
	}
	defer px.Close()
	rep, err := pxartar.Write(ctx, stdout, px.Archive, pxartar.Options{})
	if we := (*pxartar.WriteError)(nil); errors.As(err, &we) {
		return stdoutError(meta, rep.Written, we)
	}
	if err != nil {
		err = pxarStreamError(snap, px, err)
		if errors.Is(err, pxar.ErrFormat) {
			return &dataError{fmt.Errorf("damaged archive: %w; the tar stream stops before this entry: the %s written before it are out, without the end-of-archive blocks (discard what was extracted from it)",
				err, humanBytes(uint64(rep.Written)))}
		}
		if ctx.Err() == nil {
			return fmt.Errorf("%w; the tar stream stops there: the %s written before it are out, without the end-of-archive blocks", err, humanBytes(uint64(rep.Written)))
		}
		return err
	}
	el := time.Since(start)
	fetched, fetchedBytes := px.Meta.Stats().Fetched.Load(), px.Meta.Stats().FetchedBytes.Load()
	if px.Payload != nil {
		fetched += px.Payload.Stats().Fetched.Load()
		fetchedBytes += px.Payload.Stats().FetchedBytes.Load()
	}
	var left []string
	if rep.Sockets > 0 {
		left = append(left, fmt.Sprintf("%d socket(s) left out (tar cannot hold them)", rep.Sockets))
	}
	if rep.SkippedXattrs > 0 {
		left = append(left, fmt.Sprintf("%d xattr(s) left out (a name with '=')", rep.SkippedXattrs))
	}
	fmt.Fprintf(stderr, "restored %s/%s to standard output as tar: %d entries (%d files, %s; %d hardlinks), %s of tar in %.2fs (%.1f MiB/s); %d chunks fetched (%s), verified%s\n",
		snap, index.DisplayText(strings.TrimSuffix(meta, ".didx")), rep.Entries, rep.Files, humanBytes(uint64(rep.Bytes)), rep.Hardlinks,
		humanBytes(uint64(rep.Written)), el.Seconds(), restore.MiBps(uint64(rep.Written), el), fetched, humanBytes(fetchedBytes), leftWords(left))
	return nil
}

// leftWords joins what a stream left out, after "; ".
func leftWords(left []string) string {
	if len(left) == 0 {
		return ""
	}
	return "; " + strings.Join(left, ", ")
}

// pxarStreamError prefixes an error reading pxar archive px of snapshot
// snap with "SNAPSHOT/STREAM: ", the stream the error was met in (the
// payload stream's index for a payload error, else the metadata's).
func pxarStreamError(snap fmt.Stringer, px *archive.Pxar, err error) error {
	stream := px.MetaName
	if pe := (*pxar.Error)(nil); errors.As(err, &pe) && pe.Stream == pxar.StreamPayload {
		stream = px.PayloadName
	}
	return fmt.Errorf("%s/%s: %w", snap, index.DisplayText(stream), err)
}

// pxarError marks a malformed pxar archive (its chunks passed their
// checks, the archive they make does not decode) as damaged data (exit 1).
func pxarError(err error) error {
	if errors.Is(err, pxar.ErrFormat) {
		return &dataError{err}
	}
	return err
}
