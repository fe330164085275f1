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
	Digest   string   `json:"digest"`
	Offsets  []uint64 `json:"offsets"`  // byte offsets in the archive
	Length   int      `json:"length"`   // bytes
	Location string   `json:"location"` // chunk file or object
	Error    string   `json:"error"`
}

// archiveResult is the verification result of one archive.
type archiveResult struct {
	Archive       string         `json:"archive"`
	OK            bool           `json:"ok"`
	Error         string         `json:"error,omitempty"`
	Size          uint64         `json:"size"`
	ChunksChecked uint64         `json:"chunks-checked,omitempty"`
	ChunksKnown   int            `json:"chunks-already-verified,omitempty"` // shared with an archive verified before
	CRCOnly       bool           `json:"crc-only,omitempty"`                // encrypted, no key: structure and CRC checked, not content
	Damaged       []damagedChunk `json:"damaged-chunks,omitempty"`
}

// snapshotResult is the verification result of one snapshot.
type snapshotResult struct {
	Snapshot string          `json:"snapshot"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	Note     string          `json:"note,omitempty"`
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
	pf := registerPipelineFlags(fs, false)
	requireSig := registerRequireSignature(fs)
	crcOnly := fs.Bool("crc-only", false, "without --keyfile, check encrypted archives by structure and CRC only, as PBS's own verify job does (no decryption, no digest check; the manifest signature is not checked)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("want at most one SNAPSHOT, got %d arguments", fs.NArg())
	}
	if fs.NArg() == 1 {
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
	}
	if err := sf.check(); err != nil {
		return err
	}
	if err := pf.check(); err != nil {
		return err
	}
	start := time.Now()
	ns, cc, store, err := sf.openAll(ctx, stderr, false, pf.fetchersFor(sf.store))
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
			return fmt.Errorf("%w: no finished snapshot in %s of %s", snapshot.ErrNoSnapshot, snapshot.NamespaceName(ns), store)
		}
	}
	rep := verifyReport{OK: true}
	v := &verifier{store: store, cc: cc, pf: pf, sf: &sf, stderr: stderr, verified: map[verifiedKey]bool{}, crcOnly: *crcOnly, requireSig: *requireSig}
	for _, s := range snaps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := v.snapshot(ctx, s)
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
		failed := 0
		for _, sr := range rep.Snapshots {
			if !sr.OK {
				failed++
			}
		}
		return fmt.Errorf("verification failed: %d of %d snapshot(s) damaged or not verifiable (see above; encrypted archives need --keyfile)", failed, len(rep.Snapshots))
	}
	return nil
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

// verifiedKey identifies a chunk that passed verification: digests of
// encrypted and plain archives live in different spaces.
type verifiedKey struct {
	digest    crypto.Digest
	length    int // a digest verified at one length proves nothing at another
	encrypted bool
}

// verifier checks snapshots, remembering verified chunks so that chunks
// shared between archives and snapshots are read and checked once.
type verifier struct {
	store    chunkstore.Store
	cc       *crypto.Config
	pf       *pipelineFlags
	sf       *storeFlags
	stderr   io.Writer
	verified map[verifiedKey]bool
	crcOnly  bool // --crc-only: encrypted archives without key get structure and CRC checks
	// requireSig (--require-signature) fails snapshots without a checked signature.
	requireSig bool
}

// snapshot checks the manifest and every archive listed in it. A failing
// archive does not stop the others.
func (v *verifier) snapshot(ctx context.Context, s index.Snapshot) snapshotResult {
	res := snapshotResult{Snapshot: s.String(), OK: true}
	m, err := snapshot.ReadManifest(ctx, v.store, s)
	if err == nil {
		err = m.Check(v.cc)
	}
	if err == nil {
		err = checkSigned(m, s, v.cc, v.requireSig, v.stderr)
	}
	noKey := v.cc == nil && errors.Is(err, index.ErrMissingKey)
	if noKey && v.requireSig {
		res.OK, res.Error = false, err.Error()+" (--require-signature: the signature is checked with the key only)"
		return res
	}
	if noKey && !v.crcOnly {
		res.OK, res.Error = false, err.Error()+" (give --keyfile, or --crc-only to check structure and CRC without the key)"
		return res
	}
	if noKey {
		// As PBS's own verify: without the key, encrypted data is checked
		// for structure and CRC; the manifest signature cannot be checked.
		res.Note = "no key: manifest signature not checked, encrypted archives checked by structure and CRC only (give --keyfile for a full check)"
	} else if err != nil {
		res.OK, res.Error = false, err.Error()
		return res
	}
	for _, f := range m.Files {
		a := archiveResult{Archive: f.Filename, OK: true, Size: f.Size}
		unkeyed := v.cc == nil && v.crcOnly && f.CryptMode == index.CryptEncrypt
		switch {
		case strings.HasSuffix(f.Filename, ".blob") && unkeyed:
			a.CRCOnly = true
			if _, err := snapshot.CheckBlob(ctx, v.store, s, m, f.Filename); err != nil {
				a.OK, a.Error = false, err.Error()
			}
		case strings.HasSuffix(f.Filename, ".blob"):
			if _, err := snapshot.ReadBlob(ctx, v.store, s, m, f.Filename, v.cc); err != nil {
				a.OK, a.Error = false, err.Error()
			}
		default:
			v.index(ctx, s, m, f.Filename, unkeyed, &a)
		}
		res.OK = res.OK && a.OK
		res.Archives = append(res.Archives, a)
	}
	return res
}

// index runs the restore pipeline for one index archive into a discard
// target, recording every damaged chunk.
func (v *verifier) index(ctx context.Context, s index.Snapshot, m *index.Manifest, name string, unkeyed bool, a *archiveResult) {
	load := restore.LoadPlan
	if unkeyed {
		load = func(ctx context.Context, st chunkstore.Store, dir string, m *index.Manifest, name string, _ *crypto.Config) (*restore.Plan, *index.FileInfo, error) {
			return restore.LoadPlanUnkeyed(ctx, st, dir, m, name)
		}
	}
	plan, fi, err := load(ctx, v.store, s.Dir(), m, name, v.cc)
	if err != nil {
		a.OK, a.Error = false, err.Error()
		return
	}
	opts := v.pf.options(v.sf.store)
	opts.Encrypted = fi.CryptMode == index.CryptEncrypt
	opts.Key = v.cc
	opts.KeepGoing = true
	opts.CRCOnly = unkeyed
	a.CRCOnly = unkeyed
	opts.Archive = path.Join(s.Dir(), name)
	if !unkeyed {
		a.ChunksKnown = plan.Drop(func(c *restore.Chunk) bool { return v.verified[verifiedKey{c.Digest, c.Length, opts.Encrypted}] })
	}
	var stats restore.Stats
	bar := startProgress(v.stderr, !v.sf.json(), "verify "+name, int64(plan.DataBytes()), func() int64 {
		return int64(stats.DataBytes.Load())
	})
	err = restore.Run(ctx, v.store, plan, restore.Discard{}, opts, &stats)
	bar.done()
	a.ChunksChecked = stats.Fetched.Load()
	bad := map[crypto.Digest]bool{}
	var de *restore.DamagedError
	switch {
	case errors.As(err, &de):
		a.OK, a.Error = false, fmt.Sprintf("%d damaged chunk(s)", len(de.Chunks))
		for _, c := range de.Chunks {
			bad[c.Digest] = true
			a.Damaged = append(a.Damaged, damagedChunk{Digest: c.Digest.String(), Offsets: c.Offsets, Length: c.Length, Location: c.Location, Error: c.Err.Error()})
		}
	case err != nil:
		a.OK, a.Error = false, err.Error()
		return
	}
	if unkeyed {
		return // a CRC check is no proof of content
	}
	for _, c := range plan.Chunks {
		if !bad[c.Digest] {
			v.verified[verifiedKey{c.Digest, c.Length, opts.Encrypted}] = true
		}
	}
}

func printSnapshotResult(w io.Writer, r snapshotResult) {
	fmt.Fprintf(w, "%s: %s\n", r.Snapshot, okWord(r.OK))
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
	for _, a := range r.Archives {
		fmt.Fprintf(w, "  %-32s %s", a.Archive, okWord(a.OK))
		if a.CRCOnly {
			fmt.Fprint(w, " [CRC only, no key]")
		}
		if a.ChunksChecked > 0 || a.ChunksKnown > 0 {
			fmt.Fprintf(w, " (%d chunks checked", a.ChunksChecked)
			if a.ChunksKnown > 0 {
				fmt.Fprintf(w, ", %d already verified", a.ChunksKnown)
			}
			fmt.Fprint(w, ")")
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
			fmt.Fprintf(w, "    damaged chunk %s at %s (%s): %s\n", d.Digest, strings.Join(offs, " "), d.Location, d.Error)
		}
	}
}
