package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// damagedChunk is one chunk that failed verification.
type damagedChunk struct {
	Digest  string   `json:"digest"`
	Offsets []uint64 `json:"offsets"` // byte offsets in the archive
	Length  int      `json:"length"`  // bytes
	Error   string   `json:"error"`
}

// archiveResult is the verification result of one archive.
type archiveResult struct {
	Archive       string         `json:"archive"`
	OK            bool           `json:"ok"`
	Error         string         `json:"error,omitempty"`
	Size          uint64         `json:"size"`
	ChunksChecked uint64         `json:"chunks-checked,omitempty"`
	Damaged       []damagedChunk `json:"damaged-chunks,omitempty"`
}

// snapshotResult is the verification result of one snapshot.
type snapshotResult struct {
	Snapshot string          `json:"snapshot"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	Archives []archiveResult `json:"archives"`
}

// verifyReport is the whole verify output.
type verifyReport struct {
	OK        bool             `json:"ok"`
	Snapshots []snapshotResult `json:"snapshots"`
	Seconds   float64          `json:"seconds"`
	Bytes     uint64           `json:"bytes"` // archive bytes covered
}

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "[flags] [SNAPSHOT]", stderr)
	var sf storeFlags
	sf.register(fs)
	pf := registerPipelineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("want at most one SNAPSHOT, got %d arguments", fs.NArg())
	}
	if err := sf.check(); err != nil {
		return err
	}
	if err := pf.check(); err != nil {
		return err
	}
	start := time.Now()
	ns, err := sf.namespace()
	if err != nil {
		return err
	}
	cc, err := sf.loadKey(stderr)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, &sf, false, pf.fetchersFor(sf.store))
	if err != nil {
		return err
	}
	defer store.Close()
	var snaps []index.Snapshot
	if fs.NArg() == 1 {
		s, err := snapshot.Resolve(ctx, store, ns, fs.Arg(0))
		if err != nil {
			return err
		}
		snaps = append(snaps, s)
	} else {
		all, err := snapshot.List(ctx, store, ns)
		if err != nil {
			return err
		}
		for _, i := range all {
			snaps = append(snaps, i.Snapshot)
		}
		if len(snaps) == 0 {
			return fmt.Errorf("%w: no finished snapshot in namespace %q of %s", snapshot.ErrNoSnapshot, sf.ns, store)
		}
	}
	rep := verifyReport{OK: true}
	for _, s := range snaps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := verifySnapshot(ctx, store, s, cc, pf, &sf, stderr)
		rep.OK = rep.OK && r.OK
		for _, a := range r.Archives {
			rep.Bytes += a.Size
		}
		rep.Snapshots = append(rep.Snapshots, r)
		if !sf.json() {
			printSnapshotResult(stdout, r)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	if sf.json() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "verified %d snapshot(s), %s in %.2fs: %s\n", len(rep.Snapshots), humanBytes(rep.Bytes), rep.Seconds, okWord(rep.OK))
	}
	if !rep.OK {
		return errors.New("verification failed (damaged or unreadable archives listed above)")
	}
	return nil
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

// verifySnapshot checks the manifest and every archive listed in it. A
// failing archive does not stop the others.
func verifySnapshot(ctx context.Context, store chunkstore.Store, s index.Snapshot, cc *crypto.Config, pf *pipelineFlags, sf *storeFlags, stderr io.Writer) snapshotResult {
	res := snapshotResult{Snapshot: s.String(), OK: true}
	m, err := snapshot.LoadManifest(ctx, store, s, cc)
	if err != nil {
		res.OK, res.Error = false, err.Error()
		return res
	}
	for _, f := range m.Files {
		a := archiveResult{Archive: f.Filename, OK: true, Size: f.Size}
		switch {
		case strings.HasSuffix(f.Filename, ".blob"):
			if _, err := snapshot.ReadBlob(ctx, store, s, m, f.Filename, cc); err != nil {
				a.OK, a.Error = false, err.Error()
			}
		default:
			verifyIndex(ctx, store, s, m, f.Filename, cc, pf, sf, stderr, &a)
		}
		res.OK = res.OK && a.OK
		res.Archives = append(res.Archives, a)
	}
	return res
}

// verifyIndex runs the restore pipeline for one index archive into a
// discard target, recording every damaged chunk.
func verifyIndex(ctx context.Context, store chunkstore.Store, s index.Snapshot, m *index.Manifest, name string, cc *crypto.Config, pf *pipelineFlags, sf *storeFlags, stderr io.Writer, a *archiveResult) {
	plan, fi, err := restore.LoadPlan(ctx, store, s.Dir(), m, name, cc)
	if err != nil {
		a.OK, a.Error = false, err.Error()
		return
	}
	opts := pf.options(sf.store)
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = cc
	opts.KeepGoing = true
	opts.Archive = path.Join(s.Dir(), name)
	var stats restore.Stats
	bar := startProgress(stderr, !sf.json(), "verify "+name, int64(plan.Size), func() int64 {
		return int64(stats.DataBytes.Load() + stats.ZeroBytes.Load())
	})
	err = restore.Run(ctx, store, plan, restore.Discard{}, opts, &stats)
	bar.done()
	a.ChunksChecked = stats.Fetched.Load()
	var de *restore.DamagedError
	switch {
	case errors.As(err, &de):
		a.OK, a.Error = false, fmt.Sprintf("%d damaged chunk(s)", len(de.Chunks))
		for _, c := range de.Chunks {
			a.Damaged = append(a.Damaged, damagedChunk{Digest: c.Digest.String(), Offsets: c.Offsets, Length: c.Length, Error: c.Err.Error()})
		}
	case err != nil:
		a.OK, a.Error = false, err.Error()
	}
}

func printSnapshotResult(w io.Writer, r snapshotResult) {
	fmt.Fprintf(w, "%s: %s\n", r.Snapshot, okWord(r.OK))
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	for _, a := range r.Archives {
		fmt.Fprintf(w, "  %-32s %s", a.Archive, okWord(a.OK))
		if a.ChunksChecked > 0 {
			fmt.Fprintf(w, " (%d chunks checked)", a.ChunksChecked)
		}
		fmt.Fprintln(w)
		if a.Error != "" && len(a.Damaged) == 0 {
			fmt.Fprintf(w, "    error: %s\n", a.Error)
		}
		for _, d := range a.Damaged {
			var offs []string
			for _, o := range d.Offsets {
				offs = append(offs, fmt.Sprintf("[%d,%d)", o, o+uint64(d.Length)))
			}
			fmt.Fprintf(w, "    damaged chunk %s at %s: %s\n", d.Digest, strings.Join(offs, " "), d.Error)
		}
	}
}
