package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// ctGuestReport is restore-guest's report of a container snapshot: each
// pxar archive extracted into its directory, and the configuration.
type ctGuestReport struct {
	Snapshot      string        `json:"snapshot"`
	Archives      []*pxarReport `json:"archives"`
	Config        string        `json:"config,omitempty"` // the path the configuration was written to
	ChunksFetched uint64        `json:"chunks-fetched"`
	FetchedBytes  uint64        `json:"fetched-bytes"`
	Seconds       float64       `json:"seconds"`
	ExitCode      int           `json:"exit-code"`
}

// pxarBase returns the base name of a pxar archive name ("root" for
// root.pxar.didx, root.mpxar, root.ppxar.didx…).
func pxarBase(name string) string {
	base := strings.TrimSuffix(name, ".didx")
	for _, ext := range []string{".pxar", ".mpxar", ".ppxar"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// ctArchives returns the base names of the pxar archives of manifest m,
// in manifest order, each once.
func ctArchives(m *index.Manifest) []string {
	var bases []string
	for _, f := range m.Files {
		if archive.IsPxar(f.Filename) && !slices.Contains(bases, pxarBase(f.Filename)) {
			bases = append(bases, pxarBase(f.Filename))
		}
	}
	return bases
}

// ctTargets returns the pxar archives to extract (--archive selects) and
// their directories: the --map target, DIR/rootfs for root, DIR/NAME for
// another. An archive --map or --archive names that the snapshot lacks is
// a usage error.
func ctTargets(bases []string, dir string, maps map[string]string, only []string) ([]string, []string, error) {
	have := func(a string) bool { return slices.Contains(bases, pxarBase(a)) }
	want := bases
	if len(only) > 0 {
		want = nil
		for _, a := range only {
			if !have(a) {
				return nil, nil, usagef("--archive %s: the snapshot has no such pxar archive (it has %s)", index.DisplayText(a), strings.Join(bases, ".pxar, ")+".pxar")
			}
			if b := pxarBase(a); !slices.Contains(want, b) {
				want = append(want, b)
			}
		}
	}
	byBase := map[string]string{}
	for a, t := range maps {
		if !have(a) {
			return nil, nil, usagef("--map %s: the snapshot has no such pxar archive (it has %s)", index.DisplayText(a), strings.Join(bases, ".pxar, ")+".pxar")
		}
		byBase[pxarBase(a)] = t
	}
	var targets []string
	for _, b := range want {
		t, ok := byBase[b]
		if !ok {
			t = filepath.Join(dir, b)
			if b == "root" {
				t = filepath.Join(dir, "rootfs")
			}
		}
		if slices.Contains(targets, t) {
			return nil, nil, usagef("two archives go to %s: give each its own --map", index.DisplayText(t))
		}
		targets = append(targets, t)
	}
	return want, targets, nil
}

// restoreGuestCT restores a container snapshot of src: each pxar archive
// extracted into its directory, then pct.conf as restore-guest writes a
// VM's configuration.
func (rc *restoreCmd) restoreGuestCT(ctx context.Context, src *snapshot.Reader, dir string, maps map[string]string, gf guestFlags, start time.Time, opening func() time.Duration, stopRetryLines func(), stdout, stderr io.Writer) error {
	if *rc.resume || *rc.restart {
		return usagef("--resume and --restart are for disk images: a container's archive is extracted again with --force")
	}
	o, err := rc.extractOptions()
	if err != nil {
		return err
	}
	bases, targets, err := ctTargets(ctArchives(src.Manifest()), dir, maps, *gf.only)
	if err != nil {
		return err
	}
	// Every target refused is said before anything is read.
	var refused []error
	blobName, configPath := guestConfig(src.Manifest(), dir, gf)
	var config []byte
	if blobName != "" {
		if config, err = src.Blob(ctx, blobName); err != nil {
			return err
		}
		if _, err := checkGuestConfig(configPath, bases, targets, config, *rc.force, false); err != nil {
			refused = append(refused, err)
		}
	}
	for _, t := range targets {
		if err := checkExtractDir(t, o.Force); err != nil {
			refused = append(refused, err)
		}
	}
	if len(refused) > 0 {
		return usageOf(errors.Join(refused...))
	}
	rep := ctGuestReport{Snapshot: src.Snapshot().String()}
	var gerr error
	for i, b := range bases {
		r, err := extractPxar(ctx, rc, src, b+".pxar", targets[i], o, stderr, stopRetryLines)
		rep.Archives = append(rep.Archives, r)
		rep.ChunksFetched += r.ChunksFetched
		rep.FetchedBytes += r.FetchedBytes
		if err = extractError(err); err != nil {
			r.ExitCode = codeFor(ctx, err)
			gerr = err
			break
		}
	}
	if gerr == nil && config != nil {
		// Written as it is, never shown: its text is the store's.
		if err := filetarget.WriteFile(configPath, config, rc.targetOptions(0)); err != nil {
			gerr = configError(configPath, err)
		} else {
			rep.Config = configPath
		}
	}
	rep.Seconds = (time.Since(start) - opening()).Seconds()
	rep.ExitCode = codeFor(ctx, gerr)
	if rc.sf.json() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
		return gerr
	}
	if gerr != nil {
		return gerr
	}
	fmt.Fprintf(stdout, "restored container %s: %d archive(s)\n", index.DisplayText(rep.Snapshot), len(rep.Archives))
	for _, a := range rep.Archives {
		printPxarReport(stdout, a)
	}
	if rep.Config != "" {
		fmt.Fprintf(stdout, "  configuration written to %s\n", index.DisplayText(rep.Config))
	}
	return nil
}
