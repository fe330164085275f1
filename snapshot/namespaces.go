package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// ErrNoNamespace is returned for a namespace that holds nothing in the store
// (it matches chunkstore.ErrNotFound: missing data).
var ErrNoNamespace = chunkstore.MissingKind("no such namespace")

// Namespaces returns ns and the namespaces below it, at most maxDepth
// levels deeper (maxDepth < 0: all), sorted by name (§1.3). A namespace
// exists when its directory does, as PBS lists it: seen through the files
// stored in it or below it, its directory (chunkstore.DirLister: an empty
// one too) or a bucket's ".namespace" marker (§8.1). It returns an error
// wrapping ErrNoNamespace when ns is not the root and does not exist. Directories
// whose names are no namespace name are left out with a warning that
// counts them (see List); hidden ones silently.
func Namespaces(ctx context.Context, store chunkstore.Store, ns index.Namespace, maxDepth int) ([]index.Namespace, error) {
	dir := "ns"
	if !ns.IsRoot() {
		dir = ns.Path() + "/ns"
	}
	files, err := store.ListFiles(ctx, dir)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	dirs, err := listDirs(ctx, store, dir)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		paths = append(paths, d+"/") // a directory: its last level counts
	}
	if !ns.IsRoot() && len(paths) == 0 {
		if err := Exists(ctx, store, ns); err != nil {
			return nil, err
		}
	}
	seen := map[string]index.Namespace{ns.String(): ns}
	var skipped unlisted
	for _, p := range paths {
		parts := strings.Split(p, "/")
		var levels []string
		for i := 0; i+2 < len(parts) && parts[i] == "ns"; i += 2 {
			levels = append(levels, parts[i+1])
			if len(levels) <= len(ns) {
				continue
			}
			if maxDepth >= 0 && len(levels)-len(ns) > maxDepth {
				break
			}
			child := index.Namespace(append([]string(nil), levels...))
			if child.Validate() != nil {
				if !hidden(parts[i+1]) {
					skipped.add(strings.Join(parts[:i+2], "/"))
				}
				break // the levels below it are no namespace either
			}
			seen[child.String()] = child
		}
	}
	skipped.warn(store, dir, "namespace ([A-Za-z0-9_][A-Za-z0-9._-]*, at most 7 levels, 256 bytes in all)")
	out := make([]index.Namespace, 0, len(seen))
	for _, n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Exists returns nil when namespace ns exists (the root always does): its
// directory holds anything, or exists empty (chunkstore.DirLister), or a
// bucket holds its ".namespace" marker (listed as a file); else an error
// wrapping ErrNoNamespace.
func Exists(ctx context.Context, store chunkstore.Store, ns index.Namespace) error {
	if ns.IsRoot() {
		return nil
	}
	files, err := store.ListFiles(ctx, ns.Path())
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return nil
	}
	dirs, err := listDirs(ctx, store, ns.Path())
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("%w: %q in %s (nothing stored under %s/)", ErrNoNamespace, ns.String(), store, ns.Path())
	}
	return nil
}

// listDirs returns the directories at and below dir of a store that has
// directories of its own (chunkstore.DirLister); none for a bucket.
func listDirs(ctx context.Context, store chunkstore.Store, dir string) ([]string, error) {
	if dl, ok := store.(chunkstore.DirLister); ok {
		return dl.ListDirs(ctx, dir)
	}
	return nil, nil
}

// maxSmallFile bounds what is read of an owner or notes file (bytes).
const maxSmallFile = 64 << 10

// readSmall reads a small content file; a missing file gives "" and no error.
func readSmall(ctx context.Context, store chunkstore.Store, rel string) (string, error) {
	r, _, err := store.OpenFile(ctx, rel)
	if errors.Is(err, chunkstore.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxSmallFile))
	return string(data), err
}

// GroupOwner returns the owner of snap's group (its owner file, §1.3,
// e.g. "root@pam"), or "" when the group has none.
func GroupOwner(ctx context.Context, store chunkstore.Store, snap index.Snapshot) (string, error) {
	s, err := readSmall(ctx, store, path.Join(snap.GroupDir(), "owner"))
	return strings.TrimSpace(s), err
}

// GroupComment returns the first line of the group's notes file, or "".
func GroupComment(ctx context.Context, store chunkstore.Store, snap index.Snapshot) (string, error) {
	s, err := readSmall(ctx, store, path.Join(snap.GroupDir(), "notes"))
	return FirstLine(s), err
}

// FirstLine returns the first line of s without its line end, as PBS shows
// notes as a comment.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimRight(line, "\r")
}

// Protected reports whether the snapshot's directory has the .protected
// marker PBS writes for a protected snapshot; files are its directory's
// file names (Info.Files).
func Protected(files []chunkstore.FileInfo) bool {
	for _, f := range files {
		if f.Path == ".protected" {
			return true
		}
	}
	return false
}

// Notes returns the first line of the snapshot notes in the manifest's
// unprotected part ("notes"), or "".
func Notes(m *index.Manifest) string {
	var s string
	if raw, ok := m.Unprotected["notes"]; ok && json.Unmarshal(raw, &s) == nil {
		return FirstLine(s)
	}
	return ""
}

// VerifyState returns the state of the snapshot's last verification in the
// manifest's unprotected part ("verify_state": "ok" or "failed"), or "".
func VerifyState(m *index.Manifest) string {
	var v struct {
		State string `json:"state"`
	}
	if raw, ok := m.Unprotected["verify_state"]; ok && json.Unmarshal(raw, &v) == nil {
		return v.State
	}
	return ""
}
